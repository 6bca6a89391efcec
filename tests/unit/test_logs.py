"""Log lines: text or JSON, the run they are about, uvicorn's access log, no secrets."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from activities.executors.catalog import Catalog
from activities.executors.catalog_file import read_catalog_file
from activities.run_log import about_run, about_workflow, run_fields
from activities.secret_text import masked, scrub_secrets
from app.logs import configure_logging


@pytest.fixture
def logged() -> Iterator[tuple[io.StringIO, Any]]:
    """Configure logging into a buffer; give back the buffer and a configurer."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    buffer = io.StringIO()

    def configure(fmt: str, level: str = "INFO") -> None:
        configure_logging(level, fmt, stream=buffer)

    yield buffer, configure
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _json_lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_json_lines_carry_time_level_logger_and_message(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    logging.getLogger("trellis.test").info("hello %s", "there")
    (line,) = _json_lines(buffer)
    assert (line["level"], line["logger"], line["message"]) == (
        "INFO",
        "trellis.test",
        "hello there",
    )
    assert line["time"].endswith("Z")


def test_a_line_about_a_run_names_the_run_workflow_and_node(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    logging.getLogger("trellis.test").info("x", extra=run_fields("run-1", "wf-1", "n1"))
    (line,) = _json_lines(buffer)
    assert (line["run_id"], line["workflow_id"], line["node_id"]) == ("run-1", "wf-1", "n1")


def test_lines_inside_a_step_carry_its_run_without_being_told(logged: Any) -> None:
    buffer, configure = logged
    configure("text")
    with about_run("run-2", "wf-2", "node-2"):
        logging.getLogger("activities.executors.a2a").warning("could not cancel")
    logging.getLogger("trellis.test").warning("outside")
    inside, outside = buffer.getvalue().splitlines()
    assert inside.endswith("could not cancel run_id=run-2 workflow_id=wf-2 node_id=node-2")
    assert "run_id" not in outside


def test_temporal_activity_lines_name_the_run_by_its_workflow_id(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    details = {
        "workflow_id": "run-3",
        "activity_type": "execute_step",
        "workflow_type": "TrellisRun",
    }
    logging.getLogger("temporalio.activity").info("x", extra={"temporal_activity": details})
    # A schedule's trigger workflow names no run (found by an audit: its skip lines carried
    # `sched-…-run-<time>` as a run id); the workflow whose schedule fired is named.
    trigger = {
        "workflow_id": "sched-wf-5-abc-run-2026-11-30T03:46:00Z",
        "activity_type": "start_scheduled_run",
        "workflow_type": "TrellisScheduleTrigger",
    }
    with about_workflow("wf-5"):
        logging.getLogger("temporalio.activity").info("y", extra={"temporal_activity": trigger})
    run, fired = _json_lines(buffer)
    assert run["run_id"] == "run-3"
    assert "run_id" not in fired and fired["workflow_id"] == "wf-5"


def test_temporal_lines_keep_their_activity_and_drop_the_sdks_private_marks(
    logged: Any,
) -> None:
    # Every temporal_* detail was dropped but the run, and `__temporal_error_identifier`
    # (the SDK's mark on a failed activity's line) was written as a field.
    buffer, configure = logged
    configure("json")
    details = {"workflow_id": "run-4", "activity_type": "execute_step", "activity_id": "7",
               "attempt": 2, "workflow_type": "TrellisRun", "namespace": "default"}  # fmt: skip
    logging.getLogger("temporalio.activity").warning(
        "Completing activity as failed",
        extra={"temporal_activity": details, "__temporal_error_identifier": "ActivityError"},
    )
    (line,) = _json_lines(buffer)
    assert line["run_id"] == "run-4"
    assert (line["activity_type"], line["activity_id"], line["attempt"]) == ("execute_step", "7", 2)
    assert line["workflow_type"] == "TrellisRun"
    assert not [k for k in line if k.startswith(("__", "temporal_"))] and "namespace" not in line


def test_the_access_log_is_a_json_line_with_method_path_and_status(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    access = logging.getLogger("uvicorn.access")
    access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/healthz", "1.1", 200)
    (line,) = _json_lines(buffer)
    assert (line["logger"], line["method"], line["path"], line["status"]) == (
        "uvicorn.access",
        "GET",
        "/healthz",
        200,
    )


def test_the_level_setting_drops_lower_lines(logged: Any) -> None:
    buffer, configure = logged
    configure("text", "warning")
    logging.getLogger("trellis.test").info("dropped")
    logging.getLogger("trellis.test").warning("kept")
    assert "dropped" not in buffer.getvalue()
    assert "kept" in buffer.getvalue()


@pytest.mark.parametrize("library", ["httpx", "httpx2", "httpcore", "httpcore2"])
def test_http_clients_log_no_line_per_request(logged: Any, library: str) -> None:
    # httpx2 is the `mcp` SDK's client: at INFO it logged one line per MCP call.
    buffer, configure = logged
    configure("text", "info")
    logging.getLogger(library).info('HTTP Request: POST http://127.0.0.1/mcp "200 OK"')
    logging.getLogger(library).warning("connection refused")
    assert "HTTP Request" not in buffer.getvalue()
    assert "connection refused" in buffer.getvalue()


def test_an_a2a_agent_card_is_not_logged_at_each_refresh(logged: Any) -> None:
    # The a2a SDK logged every agent's whole card at INFO, in every process, each minute.
    buffer, configure = logged
    configure("text", "info")
    logging.getLogger("a2a.client.card_resolver").info("Successfully fetched agent card: …")
    assert buffer.getvalue() == ""


def test_json_lines_leave_out_uvicorns_coloured_copy_of_the_message(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    logging.getLogger("uvicorn.error").info(
        "Started server process [%d]", 7, extra={"color_message": "Started \x1b[36m%d\x1b[0m"}
    )
    (line,) = _json_lines(buffer)
    assert line["message"] == "Started server process [7]" and "color_message" not in line


SECRETS = [
    ("Authorization: Bearer abc.def-123", "abc.def-123"),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl sent", "c2lnbmF0dXJl"),
    ("connecting to mongodb://admin:s3cr3t@db:27017/x", "s3cr3t"),
    # A password without a user name (found by a review).
    ("connecting to redis://:pa55w0rd@cache:6379/0", "pa55w0rd"),
    ("cloning https://ghp_t0ken@github.com/o/r.git", "ghp_t0ken"),
    ("GET /api/v1/runs?access_token=t0ps3cret&x=1", "t0ps3cret"),
    ('{"api_key": "k3y-value"}', "k3y-value"),
    ("password=hunter2 rejected", "hunter2"),
    # After an `Authorization` name the scheme is kept and its credential masked; `-`, `_`
    # or nothing may join a name's words (found by an audit: `Authorization: *** TOK-1`,
    # and `X-Api-Key` not masked at all).
    ("Authorization: Token TOK-json-1; X-Api-Key: KEY-json-2", "TOK-json-1"),
    ("Authorization: Token TOK-json-1; X-Api-Key: KEY-json-2", "KEY-json-2"),
    ("authorization: ApiKey k3y-v4lue", "k3y-v4lue"),
    ('Authorization: Digest username="bob", nonce="n0nce", response="d1gest"', "d1gest"),
    ("Proxy-Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ('{"authorization": "Custom s3cr3t-c4red"}', "s3cr3t-c4red"),
    ("X-Api-Key: v4lue-1", "v4lue-1"),
    ("api-key=v4lue-2&x=1", "v4lue-2"),
    ("access-token: v4lue-3", "v4lue-3"),
    ("client_secret=v4lue-4", "v4lue-4"),
    # A password holding `/` (pasted unescaped into a store URL).
    ("preparing the store mongodb://trellis:Pa55/w0rd@127.0.0.1:18198/trellis", "Pa55"),
]


# What masking keeps: the scheme (it says which credential it was), and the text after it.
KEPT = [
    (
        "Authorization: Token TOK-json-1; X-Api-Key: KEY-json-2",
        "Authorization: Token ***; X-Api-Key: ***",
    ),
    (
        'Authorization: Digest username="bob", response="d1", next: rest',
        "Authorization: Digest ***, next: rest",
    ),
    (
        "Authorization: AWS4-HMAC-SHA256 Credential=A/1/s3, SignedHeaders=host;range, "
        "Signature=fe5 was refused",
        "Authorization: AWS4-HMAC-SHA256 *** was refused",
    ),
    ("authorization=abc123 rejected", "authorization=*** rejected"),
    # The text's own closing bracket is not the value's (found by an audit: it was masked).
    ("failed (reason: token=abc123)", "failed (reason: token=***)"),
    ("[api_key=xyz] sent", "[api_key=***] sent"),
    ("token=abc)def) then", "token=***) then"),
    ("authorization failed: bad credentials", "authorization failed: bad credentials"),
    ("https://host:8080/users/@me", "https://host:8080/users/@me"),
]


@pytest.mark.parametrize(("line", "shown"), KEPT)
def test_masking_keeps_the_scheme_and_the_words_around_a_credential(line: str, shown: str) -> None:
    assert scrub_secrets(line) == shown


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(("message", "secret"), SECRETS)
def test_no_token_key_or_password_reaches_a_line(
    logged: Any, fmt: str, message: str, secret: str
) -> None:
    buffer, configure = logged
    configure(fmt)
    logging.getLogger("trellis.test").warning(message)
    assert secret not in buffer.getvalue()
    assert "***" in buffer.getvalue()


@pytest.mark.parametrize(
    "message",
    [
        'token=""',
        "x api_key: '' y",
        'GET /api/v1/workflows?token="" HTTP/1.1',
        'sent {"k": "x token=\\"\\""} once',
        'Completing activity with completion: task_token: "\\n\\x01"',
    ],
)
def test_a_json_line_stays_one_json_object_whatever_the_masks_find(
    logged: Any, message: str
) -> None:
    # A mask applied to the encoded line matched its escaped quotes and left a bare one
    # (found by an audit: `curl '…/workflows?token=""'` made the access line invalid JSON).
    buffer, configure = logged
    configure("json")
    logging.getLogger("trellis.test").warning(message, extra={"note": message})
    (line,) = _json_lines(buffer)
    assert line["message"] == scrub_secrets(message)
    assert line["note"] == scrub_secrets(message)


# A catalog whose secrets no pattern knows by a name: a stdio server's env value, a
# header's, a URL's password (each quoted bare by whoever logs it).
CATALOG = """
mcpServers:
  - id: chatty
    command: [python, -m, some_server]
    env: {GARBAGE_TOKEN: "${AUDIT_STDIO_TOKEN}", API_TOKEN: written-token-42, MODE: isolated}
  - id: remote
    url: http://svc:${URL_PASSWORD}@127.0.0.1:1/mcp
    headers: {X-Upstream: "${HEADER_VALUE}"}
"""
CATALOG_SECRETS = {
    "AUDIT_STDIO_TOKEN": "stdio-TOKEN-zzz999",
    "URL_PASSWORD": "pw-in-url-777",
    "HEADER_VALUE": "hdr-value-5150",
}


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_value_the_catalog_resolved_is_masked_in_every_line(
    logged: Any, fmt: str, tmp_path: Path
) -> None:
    # The MCP SDK logged a stdio server's stdout (its token in it) in a traceback's
    # `input_value=…`: only the patterns (`token=…`, `Bearer …`) masked a line.
    path = tmp_path / "executors.yaml"
    path.write_text(CATALOG, encoding="utf-8")
    catalog = Catalog(read_catalog_file(path, CATALOG_SECRETS))
    buffer, configure = logged
    configure(fmt)
    said = " and ".join(CATALOG_SECRETS.values())
    try:
        raise ValueError(f"input_value='connected upstream with secret {said}'")
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception("Failed to parse: %s", said)
    logging.getLogger("some.library").warning(said, extra={"detail": said})
    assert all(secret not in buffer.getvalue() for secret in CATALOG_SECRETS.values())
    assert "Failed to parse: *** and *** and ***" in buffer.getvalue()
    assert "upstream with secret *** and *** and ***" in buffer.getvalue()  # the exception
    assert catalog.file.servers  # kept alive until here: its values are masked while it is


def test_a_plain_env_setting_is_not_masked_in_every_line(logged: Any, tmp_path: Path) -> None:
    # Every line masked of each `env` value lost `isolated` (or `info`, `production`)
    # wherever it appeared; a value under a credential's name is masked, as resolved ones.
    path = tmp_path / "executors.yaml"
    path.write_text(CATALOG, encoding="utf-8")
    catalog = Catalog(read_catalog_file(path, CATALOG_SECRETS))
    buffer, configure = logged
    configure("text")
    logging.getLogger("some.library").warning("isolated mode; written-token-42")
    assert "isolated mode; ***" in buffer.getvalue()
    assert catalog.redacted("isolated written-token-42") == "*** ***"  # a step's error: all


def _parse_failed(line: str) -> None:
    """What the MCP SDK logs for a stdio server's stdout line that is not JSON-RPC."""
    try:
        pydantic.TypeAdapter(dict[str, Any]).validate_json(line)
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception(
            "Failed to parse JSONRPC message from server"
        )


def test_a_stray_stdout_line_is_one_warning_cut_short_and_other_sdk_errors_stay(
    logged: Any,
) -> None:
    buffer, configure = logged
    configure("text")
    _parse_failed("starting " + "x" * 1000 + " token=abc123")
    try:
        raise ConnectionError("pipe broke")
    except ConnectionError:
        logging.getLogger("mcp.client.stdio").exception("Reading from stdout failed")
    first, *rest = buffer.getvalue().splitlines()
    assert " WARNING mcp.client.stdio: MCP server (unknown) wrote a line to stdout" in first
    assert first.endswith("(skipped): starting " + "x" * 291 + "…")
    assert " ERROR   mcp.client.stdio: Reading from stdout failed" in rest[0]
    assert rest[-1] == "ConnectionError: pipe broke"  # its traceback, as the SDK logged it


def test_extra_fields_are_masked_by_their_names_at_any_depth(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    extra = {
        "api_key": "k3y-1",
        "peer": {"password": 12345, "hops": [{"token": {"raw": "t0k-2"}}, "Bearer b3a-3"]},
        "limits": {"max_tokens": 100},
    }
    logging.getLogger("trellis.test").warning("called", extra=extra)
    (line,) = _json_lines(buffer)
    assert line["api_key"] == "***"
    assert line["peer"] == {"password": "***", "hops": [{"token": "***"}, "Bearer ***"]}
    assert line["limits"] == {"max_tokens": 100}


def test_a_secret_in_an_access_log_query_is_masked(logged: Any) -> None:
    buffer, configure = logged
    configure("json")
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "c", "GET", "/x?token=s3cr3t", "1.1", 200
    )
    assert "s3cr3t" not in buffer.getvalue()


# Lines the quick look must not wave through: each case and Unicode spelling that the
# patterns' `(?i)` matches (the long s and the Kelvin sign fold to s and k).
LOOKALIKES = [
    "AUTHORIZATION: BEARER abc.def",
    "Basic dXNlcjpwYXNz",
    "x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln y",
    "redis://u:pw@host/0",
    "redis://:pw@host/0",
    "https://ghp_t0ken@github.com/o/r.git",
    "Access-Token: abc",
    "api_\u212aey=abc",
    "client_\u017fecret: abc",
    "PASSWD=abc",
    "DB_PASSPHRASE=abc",
    "app_credential: abc",
    "private_\u212aey: abc",
    "no secret here: password is not followed by a value",
    "X-API-KEY: abc",
    "Proxy-Authorisation: Token abc",
    "GET /api/v1/workflows/8360fc75/runs/0df6372c HTTP/1.1 200",
]


@pytest.mark.parametrize("line", LOOKALIKES)
def test_the_quick_look_for_a_secret_skips_no_line_the_patterns_would_mask(line: str) -> None:
    assert scrub_secrets(line) == masked(line)
