"""A request span's URL attributes are masked as the access log masks them: a token whose
name or separator is percent-encoded too."""

from __future__ import annotations

import json

import pytest

from app.tracing import URL_ATTRIBUTES, SecretsMasked
from tests.tracing.conftest import Traced

SECRET = "s3cr3t-v4lue"


@pytest.mark.parametrize("query", [f"%74oken={SECRET}", f"limit=5&password%3D{SECRET}"])
async def test_a_percent_encoded_token_is_masked_in_the_request_span(
    traced: Traced, query: str
) -> None:
    traced.provider.add_span_processor(SecretsMasked())  # as a process's provider has it
    response = await traced.platform.api.get(f"/api/v1/workflows?{query}")
    assert response.status_code == 200

    attributes = [
        {key: span.attributes[key] for key in URL_ATTRIBUTES if key in span.attributes}
        for span in traced.spans()
        if span.attributes
    ]
    shown = json.dumps([a for a in attributes if a])
    assert "***" in shown
    assert SECRET not in shown
