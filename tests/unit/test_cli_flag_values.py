"""Flag values no request could carry are usage errors (exit 2) naming the flag, asked of no
API: a pasted token with curly quotes, an Idempotency-Key with a non-ASCII letter (both were
tracebacks), a `--patience` of `nan` (a watch that waited for good); and an error answered
by something that is not the API says so."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.support.cli_in_process import run_cli
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
    (line,) = output.splitlines()  # one line, as a setting refused is
    assert line.endswith(
        f" runs watch: invalid value '{patience}' for --patience: "
        "must be a finite number of seconds, 0 or more"
    ), line


@contextmanager
def _answering(
    status: int, body: bytes, headers: dict[str, str] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 answering every request with `status` and `body` (JSON's
    content type, and `headers`); yields its URL and the requests it was sent (`METHOD
    PATH`)."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            self.send_header("content-type", "application/json")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if status != 204:
                self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("body", "shown"),
    [(b'{"code": 5, "message": "Not Found"}', '404: {"code": 5'), (b"", "404, not as")],
)
def test_an_error_not_in_the_apis_shape_asks_whether_the_url_is_the_apis(
    body: bytes, shown: str
) -> None:
    # The Temporal UI's 404 printed `Error: 404 {"code": 5, …}`, an empty one `Error: 404 `.
    with _answering(404, body) as (url, _):
        result = CliRunner().invoke(cli, ["workflows", "list"], env={"TRELLIS_URL": url})
    assert result.exit_code == 1, result.output
    assert shown in result.output, result.output
    assert "is it the Trellis API? set TRELLIS_URL or --url" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["workflows", "list"],
        ["workflows", "list", "--json"],
        ["runs", "show", "run-1"],
        ["runs", "start", "wf1", "--json"],
        ["approvals"],
        ["catalog", "servers"],
        ["approve", "run-1", "S"],
        ["workflows", "delete", "wf1", "--yes"],
    ],
)
def test_an_empty_success_is_not_the_apis_and_ends_the_command_in_one_line(
    args: list[str],
) -> None:
    # The API answers everything with JSON but a DELETE (204): an empty 200 was a
    # TypeError traceback, and with --json printed nothing with exit 0, so a script
    # believed a run had started (found by an outside audit).
    with _answering(200, b"") as (url, seen):
        result = CliRunner().invoke(cli, args, env={"TRELLIS_URL": url})
    assert result.exit_code == 1, result.output
    (line,) = result.output.splitlines()
    assert line.startswith(f"Error: {url}/api/v1/"), line
    assert line.endswith(
        " answered 200 with no body, not JSON: is it the Trellis API? set TRELLIS_URL or --url"
    ), line
    assert len(seen) == 1, seen  # nothing more was sent on the strength of it


def test_a_delete_answered_204_with_no_body_is_done_and_a_read_so_answered_is_not() -> None:
    with _answering(204, b"") as (url, seen):
        deleted = CliRunner().invoke(
            cli, ["workflows", "delete", "wf1", "--yes"], env={"TRELLIS_URL": url}
        )
        read = CliRunner().invoke(cli, ["workflows", "list"], env={"TRELLIS_URL": url})
    assert deleted.exit_code == 0 and deleted.output == "deleted workflow wf1\n", deleted.output
    assert read.exit_code == 1, read.output
    assert "answered 204 with no body, not JSON: is it the Trellis API?" in read.output
    assert [s.split("?")[0] for s in seen] == [
        "DELETE /api/v1/workflows/wf1",
        "GET /api/v1/workflows",
    ]


@pytest.mark.parametrize(
    ("principal", "says"),
    [
        ("user:a\x00b", "a control character (U+0000)"),
        ("user:a\x1cb", "whitespace (U+001C)"),
        ("role:a\u3000b", "whitespace (U+3000)"),
        ("user:a\x9fb", "a control character (U+009F)"),
        ("user:bob\u202e", "a format character (U+202E)"),
        ("role:\u200bops", "a format character (U+200B)"),
        ("user:" + "x" * 201, "is 201 characters long (at most 200)"),
    ],
)
def test_a_grant_the_api_would_refuse_is_a_usage_error(principal: str, says: str) -> None:
    # The API's rule (docs/security.md, "Principals"); the CLI showed `user:a\x00b` back.
    code, output = _run(["workflows", "share", "wf-1", "--grant", f"{principal}=VIEW"])
    assert code == 2, output
    assert "Invalid value for --grant" in output and says in output, output


@pytest.mark.parametrize("principal", ["user:zoë", "role:財務", "user:a\x00b"])
def test_a_grant_of_any_script_and_any_revoke_are_sent(principal: str) -> None:
    # Nothing listens: exit 1 once the request is made. A revoke takes any stored grant.
    grant = ["--grant", f"{principal}=VIEW"] if principal.isprintable() else []
    code, output = _run(["workflows", "share", "wf-1", *grant, "--revoke", principal + "x"])
    assert code == 1 and "cannot reach the Trellis API" in output, output


# What each command reads in an answer; a page of the wrong shape ended each in a
# KeyError or TypeError traceback (found by an outside audit).
_READERS = [
    ["workflows", "list"], ["workflows", "show", "wf1"], ["workflows", "versions", "wf1"],
    ["runs", "show", "run-1"], ["runs", "list", "wf1"], ["runs", "pause", "run-1"],
    ["runs", "start", "wf1"], ["approvals"], ["approve", "run-1", "S"],
    ["schedules", "list", "wf1"], ["schedules", "show", "sched-wf1-0123456789ab"],
    ["catalog", "servers"], ["catalog", "agents"], ["workflows", "share", "wf1"],
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "body"),
    [(args, body) for args in [*_READERS, ["runs", "watch", "run-1"]]
     for body in (b"{}", b"[]", b'{"ok": true}', b'"ok"')
     if not (args[0] == "catalog" and body == b"[]")],  # the catalog's answer naming none
)  # fmt: skip
def test_an_answer_not_in_the_apis_shape_ends_the_command_in_one_line(
    args: list[str], body: bytes
) -> None:
    with _answering(200, body) as (url, seen):
        result = CliRunner().invoke(cli, args, env={"TRELLIS_URL": url})
    assert result.exit_code == (3 if args[1:2] == ["watch"] else 1), result.output
    (line,) = result.output.splitlines()
    assert line.startswith(f"Error: {url}/api/v1/"), line
    assert " answered 200 with JSON not in the shape the Trellis API answers (" in line, line
    assert line.endswith("): is it the Trellis API? set TRELLIS_URL or --url"), line
    # A decision or a control read its run first: nothing was sent on the strength of it.
    assert len(seen) == 1 or args[:2] == ["runs", "start"], seen


def test_an_answer_missing_a_field_names_it() -> None:
    with _answering(200, b'{"ok": true}') as (url, _):
        result = CliRunner().invoke(cli, ["workflows", "list"], env={"TRELLIS_URL": url})
    assert "with JSON not in the shape the Trellis API answers (no 'workflows')" in result.output


def test_a_redirect_names_where_it_points() -> None:
    # A proxy's sign-in (or http to https) said only "answered 302 with no body".
    to = "https://sso.example/login?next=%2Fapi"
    with _answering(302, b"", {"location": to}) as (url, seen):
        result = CliRunner().invoke(cli, ["workflows", "list"], env={"TRELLIS_URL": url})
    assert result.exit_code == 1, result.output
    (line,) = result.output.splitlines()
    assert f" answered 302 to {to} with no body, not JSON: is it the Trellis API?" in line, line
    assert len(seen) == 1, seen  # not followed


@pytest.mark.parametrize(
    ("args", "name"),
    [(["runs", "show", ""], "RUN_ID"), (["runs", "pause", ""], "RUN_ID"),
     (["runs", "watch", ""], "RUN_ID"), (["runs", "list", ""], "WORKFLOW_ID"),
     (["approve", "", "S"], "RUN_ID"), (["approve", "run-1", ""], "STEP_ID"),
     (["runs", "rerun", "", "S"], "RUN_ID"), (["runs", "rerun", "run-1", ""], "NODE_ID"),
     (["workflows", "delete", "", "--yes"], "WORKFLOW_ID"),
     (["workflows", "enable", ""], "WORKFLOW_ID"), (["workflows", "share", ""], "WORKFLOW_ID"),
     (["workflows", "versions", ""], "WORKFLOW_ID"), (["schedules", "delete", ""], "SCHEDULE_ID")],
)  # fmt: skip
def test_an_empty_id_is_a_usage_error_naming_its_argument(args: list[str], name: str) -> None:
    # Sent as-is, it asked for another path: "404 …: No resource at /api/v1/runs/".
    with _answering(200, b"{}") as (url, seen):
        result = CliRunner().invoke(cli, args, env={"TRELLIS_URL": url})
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert line.endswith(f": invalid value '' for {name}: an id is never empty"), line
    assert seen == []


@pytest.mark.parametrize(
    "args",
    [["runs", "show", "run-\udcff"], ["runs", "start", "wf1", "--input", "name=\udcff\udcfe"],
     ["workflows", "list", "--query", "\udcff"], ["approve", "run-1", "\udcff"],
     ["runs", "start", "wf1", "--input-json", '{"a":"\udcff"}'], ["runs", "watch", "\udcff"]],
    ids=lambda args: " ".join(args[:2]),
)  # fmt: skip
def test_an_argument_that_is_not_utf8_is_a_usage_error_naming_it(args: list[str]) -> None:
    # A shell's `$'\xff'` reaches Python as the lone surrogate U+DCFF, which no request
    # carries: a UnicodeEncodeError traceback, exit 1 (found by an outside audit).
    with _answering(200, b"{}") as (url, seen):
        result = run_cli(args, {"TRELLIS_URL": url})
    assert result.returncode == 2, result.stderr
    typed = args[-1].encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    assert result.stderr == f"trellis {args[0]}: '{typed}' is not UTF-8 text\n"
    assert seen == []


def test_json_on_stdin_that_is_not_utf8_is_a_usage_error() -> None:
    # As `--input-json @FILE` of such a file is; the bytes of a process's real stdin and
    # argument, as a shell passes them.
    with _answering(200, b"{}") as (url, seen):
        piped = subprocess.run(
            [sys.executable, "-m", "app.cli", "runs", "start", "wf1", "--input-json", "-"],
            input=b'{"a":"\xff"}', capture_output=True, env={**os.environ, "TRELLIS_URL": url},
            timeout=60, check=False,
        )  # fmt: skip
        typed = subprocess.run(
            [sys.executable, "-m", "app.cli", "runs", "show", b"run-\xff"],
            capture_output=True, env={**os.environ, "TRELLIS_URL": url}, timeout=60, check=False,
        )  # fmt: skip
    assert piped.returncode == 2, piped.stderr
    assert b"Error: Invalid value for --input-json: stdin is not UTF-8 text" in piped.stderr
    assert (typed.returncode, typed.stderr) == (2, b"trellis runs: 'run-\\xff' is not UTF-8 text\n")
    assert seen == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:9?x=1", "http://127.0.0.1:9/#top",
                                 "http://127.0.0.1:9?"])  # fmt: skip
def test_a_url_with_a_query_or_a_fragment_is_a_usage_error(url: str) -> None:
    # Each request's path went after the query: every command failed with a 404.
    for args, env in ((["workflows", "list"], {"TRELLIS_URL": url}),
                      (["runs", "watch", "run-1", "--url", url], {})):  # fmt: skip
        result = CliRunner().invoke(cli, args, env=env)
        assert result.exit_code == 2, result.output
        assert (
            f"--url / TRELLIS_URL: '{url}' is not the URL of an API: it has a query or a "
            "fragment (?…, #…): give the API's address alone"
        ) in result.output, result.output


@pytest.mark.parametrize(
    "command", [["runs", "start", "wf1"], ["schedules", "create", "wf1", "--cron", "@daily"]]
)
def test_a_key_given_by_input_json_and_by_input_is_a_usage_error(command: list[str]) -> None:
    # README says --input values are added to --input-json's: `a` was silently 2.
    given = ["--input-json", '{"a": 1, "b": 2}', "--input", "a=2", "--input", "c=3"]
    with _answering(200, b"{}") as (url, seen):
        result = CliRunner().invoke(cli, [*command, *given], env={"TRELLIS_URL": url})
    assert result.exit_code == 2, result.output
    assert "Invalid value for --input: 'a' given by --input-json too: give each key once" in (
        result.output
    )
    assert seen == []


def test_a_token_given_with_its_bearer_prefix_is_refused_saying_so() -> None:
    # It was refused as "a space, a line end, a curly quote…": the space after `Bearer`.
    code, output = _run(["workflows", "list", "--token", "Bearer eyJabc.def.ghi"])
    assert code == 2, output
    assert "--token / TRELLIS_TOKEN: it starts with 'Bearer ': give the token alone" in output
