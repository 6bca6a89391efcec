"""The API's access log masks a token in a request's path or query, percent-encoded too."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import httpx
import pytest

from app.logs import configure_logging

SECRET = "s3cr3t-v4lue"
# Spellings of what the access log masks (docs/operations.md, Logs) that a client may send
# percent-encoded: the name, its separator, or a whole path segment.
ENCODED = [
    f"/api/v1/workflows?%74oken={SECRET}",
    f"/api/v1/workflows?access%5Ftoken={SECRET}&limit=5",
    f"/api/v1/workflows?API%5FKEY={SECRET}",
    f"/api/v1/workflows?x=1&password%3D{SECRET}",
    f"/api/v1/hooks/token%3D{SECRET}/x",
    f"/api/v1/hooks/token={SECRET}",
    f"/api/v1/hooks/Bearer%20{SECRET}",
]


@pytest.fixture(params=["text", "json"])
def access_log(request: pytest.FixtureRequest) -> Iterator[io.StringIO]:
    """The process's log lines, in either format, captured while the test runs."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    buffer = io.StringIO()
    configure_logging("INFO", request.param, stream=buffer)
    yield buffer
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


@pytest.mark.parametrize("path", ENCODED)
async def test_a_percent_encoded_token_is_masked_in_the_access_log(
    client: httpx.AsyncClient, access_log: io.StringIO, path: str
) -> None:
    await client.get(path)
    lines = [line for line in access_log.getvalue().splitlines() if "uvicorn.access" in line]
    assert lines, access_log.getvalue()
    assert SECRET not in "\n".join(lines), lines
    assert "***" in lines[-1]
