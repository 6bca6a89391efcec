"""Flag values no request could carry are usage errors (exit 2) naming the flag, asked of no
API: a pasted token with curly quotes, an Idempotency-Key with a non-ASCII letter (both were
tracebacks), a `--patience` of `nan` (a watch that waited for good)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.support.server import free_port


def _run(args: list[str], **env: str) -> tuple[int, str]:
    # Nothing listens there: a request would fail with exit 1, not a usage error's 2.
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(cli, args, env={"TRELLIS_URL": url, **env})
    return result.exit_code, result.output


@pytest.mark.parametrize("token", ["“eyJabc”", "eyJ abc", "abc\ndef", "clé"])
def test_a_token_no_bearer_token_can_be_is_a_usage_error(token: str) -> None:
    for args, env in ((["workflows", "list", "--token", token], {}),
                      (["workflows", "list"], {"TRELLIS_TOKEN": token})):  # fmt: skip
        code, output = _run(args, **env)
        assert code == 2, output
        assert "--token / TRELLIS_TOKEN: it has characters no token has" in output


def test_space_around_a_token_is_not_part_of_it() -> None:
    # A token read from a file with its line end: sent without it (the API is unreachable
    # here, exit 1: the request was made).
    code, output = _run(["workflows", "list"], TRELLIS_TOKEN="eyJabc.def.ghi\n")
    assert code == 1 and "cannot reach the Trellis API" in output, output


@pytest.mark.parametrize("key", ["clé-1", "", "line\nend", "k" * 201])
def test_an_idempotency_key_no_header_can_carry_is_a_usage_error(key: str) -> None:
    code, output = _run(["runs", "start", "wf-1", "--idempotency-key", key])
    assert code == 2, output
    assert "an Idempotency-Key is 1 to 200 printable ASCII characters" in output


@pytest.mark.parametrize("patience", ["nan", "inf", "-1"])
def test_a_patience_that_is_not_a_finite_number_of_seconds_is_a_usage_error(
    patience: str,
) -> None:
    code, output = _run(["runs", "watch", "run-1", "--patience", patience])
    assert code == 2, output
    assert "--patience" in output
