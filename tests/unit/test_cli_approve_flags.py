"""`trellis approve` refuses flags that make different decisions (one would silently win)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.support.server import free_port


@pytest.mark.parametrize(
    "flags",
    [
        ["--reject", "--input", "code=1"],
        ["--choice", "a", "--edited-output", "{}"],
        ["--input", "code=1", "--choice", "a"],
    ],
)
def test_two_decisions_at_once_are_a_usage_error_asking_nothing(flags: list[str]) -> None:
    # Nothing listens there: a request would fail with exit 1, not the usage error's 2.
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli, ["approve", "run-1", "gate", *flags], env={"TRELLIS_URL": url})
    assert result.exit_code == 2, result.output
    assert "are different decisions: give one" in result.output
