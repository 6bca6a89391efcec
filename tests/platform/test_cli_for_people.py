"""The people's CLI against a real `trellis dev`: apply a workflow, start a run, watch it
live, approve its gate from the CLI and see it complete; --json prints the API's answer."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from rich.console import Console

from app.cli.api_client import TrellisApi
from app.cli.node_pages import latest_node_runs
from app.cli.output import Session
from app.cli.run_watch import WATCH_FAILED
from tests.platform.conftest import REPO, DevProcess, running_dev, trellis_env
from tests.support.cli_in_process import run_cli
from tests.support.server import free_port
from tests.unit.test_cli_flag_values import _answering


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    """One `trellis dev` for the module (JSON logs, so the log tests can read them)."""
    env = trellis_env(tmp_path_factory.mktemp("cli") / "data", TRELLIS_LOG_FORMAT="json")
    with running_dev(env) as process:
        yield process


def trellis(
    dev: DevProcess, *args: str, stdin: str | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    """`trellis ARGS`, in this process (tests/support/cli_in_process.py)."""
    return run_cli(args, {**dev.env, "TRELLIS_URL": dev.api_url, **extra_env}, stdin)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr + result.stdout
    return result.stdout


def gated_definition(path: Path, name: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "nodes": [
                    {"name": "Ask", "nodeType": "step", "executorKey": "builtin:echo",
                     "config": {"q": "ship?"},
                     "humanReview": {"requiresConfirmation": True,
                                     "confirmationMessage": "Ship it?"}},
                    {"name": "Greet", "nodeType": "step", "executorKey": "builtin:echo",
                     "config": {"greeting": "Hello, {{ input.who }}!"}},
                ],
            }
        )
    )  # fmt: skip
    return path


def applied_workflow(dev: DevProcess, tmp_path: Path) -> str:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    created = json.loads(
        ok(
            trellis(
                dev,
                "workflows",
                "apply",
                "-f",
                str(gated_definition(tmp_path / "wf.yaml", name)),
                "--json",
            )
        )
    )
    ok(trellis(dev, "workflows", "enable", created["id"]))
    return str(created["id"])


def wait_for_gate(dev: DevProcess, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        inbox = httpx.get(f"{dev.api_url}/api/v1/approvals", params={"perPage": 100}).json()
        mine = [a for a in inbox["approvals"] if a["runId"] == run_id]
        if mine:
            return mine[0]
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} never reached its gate")


def test_approve_from_the_cli_and_watch_the_run_complete(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    started = json.loads(
        ok(trellis(dev, "runs", "start", workflow_id, "--input", "who=Ada", "--json"))
    )
    run_id = started["runId"]
    watcher = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "runs", "watch", run_id],
        env={**dev.env, "TRELLIS_URL": dev.api_url}, cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        gate = wait_for_gate(dev, run_id)
        assert gate["workflowId"] == workflow_id
        approved = ok(trellis(dev, "approve", run_id, gate["stepId"]))
        assert f"run {run_id}" in approved
        out, err = watcher.communicate(timeout=30)
    finally:
        watcher.kill()
    assert watcher.returncode == 0, err
    assert "node_awaiting_approval" in out
    assert "run_completed" in out
    assert out.strip().endswith(f"run {run_id} completed")
    shown = json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))
    assert shown["status"] == "completed"
    assert shown["finalOutput"]["config"] == {"greeting": "Hello, Ada!"}


def test_a_command_repeated_with_its_idempotency_key_is_applied_once(
    dev: DevProcess, tmp_path: Path
) -> None:
    # docs/hitl.md's answer to a lost response is "repeat it with the same Idempotency-Key";
    # the CLI could send none, and a repeated `runs pause` was a 409.
    workflow_id = applied_workflow(dev, tmp_path)

    def twice(*args: str) -> list[dict[str, Any]]:
        return [json.loads(ok(trellis(dev, *args, "--json"))) for _ in range(2)]

    first, again = twice("runs", "start", workflow_id, "--idempotency-key", "start-1")
    assert first["runId"] == again["runId"]
    run_id = first["runId"]
    gate = wait_for_gate(dev, run_id)
    paused = twice("runs", "pause", run_id, "--idempotency-key", "pause-1")
    assert [p["status"] for p in paused] == ["paused", "paused"]
    twice("runs", "resume", run_id, "--idempotency-key", "resume-1")
    decided = twice("approve", run_id, gate["stepId"], "--idempotency-key", "ok-1")
    assert decided[0] == decided[1]
    shown = json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))
    assert len(shown["resolvedRequirements"]) == 1
    events = httpx.get(f"{dev.api_url}/api/v1/workflows/{workflow_id}/runs/{run_id}/events").text
    assert events.count("event: run_paused") == 1 and events.count("event: run_resumed") == 1
    # Without a key a repeat is a new request: refused, the run being past its gate.
    assert trellis(dev, "runs", "pause", run_id).returncode == 1


def test_approve_input_keeps_a_text_fields_value_as_written(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `--input code=02139` was JSON-parsed only when it could be: `code=12345` became the
    # number 12345 and the API refused it ("userInput.code must be a string").
    form = {"requiresUserInput": True, "userInputSchema": [
        {"name": "code", "fieldType": "string", "required": True},
        {"name": "count", "fieldType": "number", "required": True},
    ]}  # fmt: skip
    definition = {"name": f"cli-{uuid.uuid4().hex[:8]}", "nodes": [
        {"name": "Ask", "nodeType": "step", "executorKey": "builtin:transform",
         "config": {"map": {"code": "user_input.code", "count": "user_input.count"}},
         "humanReview": form},
    ]}  # fmt: skip
    path = tmp_path / "form.yaml"
    path.write_text(yaml.safe_dump(definition))
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))[
        "id"
    ]
    ok(trellis(dev, "workflows", "enable", workflow_id))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    gate = wait_for_gate(dev, run_id)
    ok(
        trellis(
            dev, "approve", run_id, gate["stepId"], "--input", "code=12345", "--input", "count=3"
        )
    )
    deadline = time.monotonic() + 30
    shown: dict[str, Any] = {}
    while time.monotonic() < deadline and shown.get("status") != "completed":
        shown = json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))
        time.sleep(0.2)
    assert shown["finalOutput"] == {"code": "12345", "count": 3}


def test_watch_of_a_failing_run_ends_saying_why(dev: DevProcess, tmp_path: Path) -> None:
    # Node events carry no error: the watch ended "run … failed" and nothing more.
    path = tmp_path / "failing.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}",
             "nodes": [{"name": "Greet", "nodeType": "step", "executorKey": "builtin:echo",
                        "config": {"message": "{{ input.missing }}"}}]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    ok(trellis(dev, "workflows", "enable", workflow_id["id"]))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    watched = trellis(dev, "runs", "watch", run_id)
    assert watched.returncode == 1, watched.stderr
    last = watched.stdout.strip().splitlines()[-1]
    assert last.startswith(f"run {run_id} failed: Node 'Greet' failed: CEL evaluation of"), last


def test_a_piped_watch_says_which_attempt_a_retry_is_and_how_the_last_failed(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Each retry printed another bare "node_started Wait running" line.
    path = tmp_path / "retrying.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}",
             "nodes": [{"name": "Wait", "nodeType": "step", "executorKey": "builtin:delay",
                        "config": {"seconds": 30},
                        "stepConfig": {"timeoutSeconds": 1, "maxRetries": 1,
                                       "backoffBaseSeconds": 3}}]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    ok(trellis(dev, "workflows", "enable", workflow_id["id"]))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    watched = trellis(dev, "runs", "watch", run_id)
    assert watched.returncode == 1, watched.stderr
    started = [line for line in watched.stdout.splitlines() if "node_started" in line]
    assert len(started) == 2, watched.stdout
    assert started[0].endswith("node_started             Wait running"), started
    assert started[1].endswith(
        "Wait running (attempt 2; attempt 1 failed: step timed out (start-to-close,"
        " timeoutSeconds 1) waiting for builtin:delay)"
    ), started


def test_json_prints_exactly_what_the_api_returned(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    printed = ok(trellis(dev, "workflows", "show", workflow_id, "--json"))
    answered = httpx.get(f"{dev.api_url}/api/v1/workflows/{workflow_id}").text
    assert printed == answered + "\n"


def test_a_bare_run_id_finds_its_workflow_for_every_run_command(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    paused = json.loads(ok(trellis(dev, "runs", "pause", run_id, "--json")))
    assert paused["status"] == "paused"
    ok(trellis(dev, "runs", "resume", run_id))
    ok(trellis(dev, "runs", "cancel", run_id))
    listed = ok(trellis(dev, "runs", "list", workflow_id))
    assert run_id in listed
    deadline = time.monotonic() + 20
    while json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))["status"] != "cancelled":
        assert time.monotonic() < deadline, "the run was not cancelled"
        time.sleep(0.2)
    retried = json.loads(ok(trellis(dev, "runs", "retry", run_id, "--json")))
    assert retried["parentRunId"] == run_id


def test_tables_list_workflows_runs_and_the_inbox(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    assert workflow_id in ok(trellis(dev, "workflows", "list"))
    assert run_id in ok(trellis(dev, "runs", "list", workflow_id, "--status", "awaiting_approval"))
    inbox = json.loads(ok(trellis(dev, "approvals", "--json")))
    assert run_id in [a["runId"] for a in inbox["approvals"]]
    inbox_table = ok(trellis(dev, "approvals", COLUMNS="1000"))
    assert "Ship it?" in inbox_table
    # What each gate asks and who may decide it; the page it is (it said "before").
    row = next(line for line in inbox_table.splitlines() if run_id in line)
    assert "Confirmation" in row and "not restricted" in row, row
    assert re.search(r"approvals \(\d+; page 1 of \d+\)", inbox_table), inbox_table
    detail = ok(trellis(dev, "runs", "show", run_id))
    assert "awaiting_approval" in detail and f"trellis approve {run_id}" in detail
    ok(trellis(dev, "runs", "cancel", run_id))


def test_run_show_names_the_fields_and_routes_a_gate_asks_for(
    dev: DevProcess, tmp_path: Path
) -> None:
    # A gate's row said "UserInput" or "RouteSelection" and no more: an approver had to
    # read the run's JSON to learn what to type after --input or --choice.
    form = {"requiresUserInput": True, "userInputSchema": [
        {"name": "zip", "fieldType": "string", "required": True},
        {"name": "count", "fieldType": "number", "required": False},
        {"name": "currency", "fieldType": "string", "required": True, "defaultValue": "EUR"},
    ]}  # fmt: skip
    route = {"name": "Pick", "nodeType": "router", "conditionCel": "'fast'",
             "humanReview": {"requiresUserInput": True},
             "choices": [{"name": name, "steps": [{"name": name.title(), "nodeType": "step",
                                                   "executorKey": "builtin:echo"}]}
                         for name in ("fast", "slow")]}  # fmt: skip
    path = tmp_path / "asks.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True,
             "nodes": [{"name": "Both", "nodeType": "parallel", "children": [
                 {"name": "Form", "nodeType": "step", "executorKey": "builtin:echo",
                  "humanReview": form}, route]}]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    deadline = time.monotonic() + 30
    while len(json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))
              ["pendingRequirements"]) < 2:  # fmt: skip
        assert time.monotonic() < deadline, "the run never reached both gates"
        time.sleep(0.2)
    shown = ok(trellis(dev, "runs", "show", run_id, COLUMNS="200"))
    # A required field with a default may be left out: no `*`, its default shown.
    assert '--input: zip* (str), count (float), currency (str, default "EUR")' in shown, shown
    assert "--choice: fast, slow; suggested fast" in shown, shown
    ok(trellis(dev, "runs", "cancel", run_id))


def test_an_output_review_shows_the_output_and_offers_only_the_decisions_it_takes(
    dev: DevProcess, tmp_path: Path
) -> None:
    # NEEDS said OutputReview and MESSAGE `-`: the output under review was in the JSON
    # only. The hint offered --input and --choice at every gate.
    review = {"requiresOutputReview": True}
    path = tmp_path / "review.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True,
             "nodes": [{"name": "Draft", "nodeType": "step", "executorKey": "builtin:echo",
                        "config": {"a": "draft\x1b[2J", "z": "x" * 1000},
                        "humanReview": review}]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    wait_for_gate(dev, run_id)
    for args in (("runs", "show", run_id), ("approvals", "--per-page", "100")):
        out = ok(trellis(dev, *args, COLUMNS="1000"))
        assert 'output: {"config":{"a":"draft\\u001b[2J","z":"xxx' in out, out
        assert "…" in out and "x" * 1000 not in out and "\x1b" not in out, args
    shown = ok(trellis(dev, "runs", "show", run_id, COLUMNS="1000"))
    assert f"trellis approve {run_id} STEP_ID [--reject | --edited-output JSON]" in shown
    confirm_only = applied_workflow(dev, tmp_path)
    other = json.loads(ok(trellis(dev, "runs", "start", confirm_only, "--json")))["runId"]
    wait_for_gate(dev, other)
    hint = ok(trellis(dev, "runs", "show", other, COLUMNS="1000"))
    assert f"trellis approve {other} STEP_ID [--reject]" in hint, hint
    ok(trellis(dev, "runs", "cancel", run_id))
    ok(trellis(dev, "runs", "cancel", other))


# Written by another user (a shared workflow) or by a step: rich markup that does not
# parse, a link, and terminal control sequences (retitle the window, colour, clear screen).
HOSTILE = "[/bold] [link=https://evil.example]x[/link] \x1b]0;owned\x07\x1b[2J\r\u202eevil"
# Names hold no control characters (the API refuses them: a 400); markup and a bidi
# override still reach one.
HOSTILE_NAME = "[/bold] [link=https://evil.example]x[/link] \u202eevil"


def test_names_and_messages_are_shown_as_text_never_as_markup_or_control_codes(
    dev: DevProcess,
) -> None:
    gate = {"requiresConfirmation": True, "confirmationMessage": HOSTILE}
    step = {
        "name": HOSTILE_NAME,
        "nodeType": "step",
        "executorKey": "builtin:echo",
        "humanReview": gate,
    }
    refused = httpx.post(f"{dev.api_url}/api/v1/workflows", json={"name": HOSTILE, "nodes": [step]})
    assert refused.status_code == 400, refused.text
    created = httpx.post(
        f"{dev.api_url}/api/v1/workflows",
        json={"name": f"{HOSTILE_NAME} {uuid.uuid4().hex[:8]}", "nodes": [step]},
    )
    assert created.status_code == 201, created.text
    workflow_id = created.json()["id"]
    ok(trellis(dev, "workflows", "enable", workflow_id))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    for args in (
        ("workflows", "list"),
        ("workflows", "show", workflow_id),
        ("runs", "show", run_id),
        ("approvals",),
    ):
        out = ok(trellis(dev, *args, COLUMNS="1000"))  # wide: no column folds the text
        assert "[/bold] [link=https://evil.example]x[/link]" in out, args
        assert "\\u202eevil" in out, args
        assert not any(c in out for c in "\x1b\x07\r\u202e"), args
        if args == ("approvals",):  # the gate's message, control codes and all
            assert "\\x1b]0;owned\\x07\\x1b[2J\\r\\u202eevil" in out, out
    ok(trellis(dev, "runs", "cancel", run_id))


def test_a_run_input_larger_than_a_command_line_comes_from_a_file_or_stdin(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `--input-json` took only inline JSON, and Linux refuses an argument over 128 KiB
    # ("Argument list too long"): a larger input could not be given at all.
    workflow_id = applied_workflow(dev, tmp_path)
    given = {"who": "日本", "notes": "x" * 300_000}
    path = tmp_path / "input.json"
    path.write_text(json.dumps(given, ensure_ascii=False), encoding="utf-8")
    for args, stdin in (([f"@{path}"], None), (["-"], json.dumps(given))):
        result = trellis(dev, "runs", "start", workflow_id, "--input-json", *args,
                         "--input", "n=1", "--json", stdin=stdin)  # fmt: skip
        run_id = json.loads(ok(result))["runId"]
        run = json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))
        assert run["initialInput"] == {**given, "n": 1}, args
        ok(trellis(dev, "runs", "cancel", run_id))
    missing = trellis(dev, "runs", "start", workflow_id, "--input-json", f"@{tmp_path}/none")
    assert missing.returncode == 2 and "cannot read" in missing.stderr, missing.stderr


def test_apply_reads_the_definition_from_stdin(dev: DevProcess, tmp_path: Path) -> None:
    path = gated_definition(tmp_path / "wf.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    created = json.loads(
        ok(trellis(dev, "workflows", "apply", "-f", "-", "--json", stdin=path.read_text()))
    )
    again = ok(trellis(dev, "workflows", "apply", "-f", "-", stdin=path.read_text()))
    assert again.strip() == f"workflow {created['id']} unchanged (version 1)"


def test_apply_again_updates_the_workflow_of_the_same_name(dev: DevProcess, tmp_path: Path) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    path = gated_definition(tmp_path / "wf.yaml", name)
    first = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    # The file names no node ids: the stored ones are kept, so nothing changed. (Each
    # apply was a new version differing only in the ids the API gave the nodes.)
    again = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert again.strip() == f"workflow {first['id']} unchanged (version 1)"
    path.write_text(path.read_text().replace("Ship it?", "Ship it now?"))
    changed = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert changed.strip() == f"updated workflow {first['id']} (version 2)"
    stored = json.loads(ok(trellis(dev, "workflows", "show", first["id"], "--json")))
    assert [n["id"] for n in stored["nodes"]] == [n["id"] for n in first["nodes"]]


def test_apply_of_a_file_saying_enabled_creates_it_enabled(dev: DevProcess, tmp_path: Path) -> None:
    # A create ignores `enabled` and an update applies it: the first apply of the file
    # left the workflow disabled without a word, the second enabled it.
    path = gated_definition(tmp_path / "wf.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    path.write_text("enabled: true\n" + path.read_text())
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    assert created["enabled"] is True and created["version"] == 1
    stored = json.loads(ok(trellis(dev, "workflows", "show", created["id"], "--json")))
    assert stored["enabled"] is True
    run_id = json.loads(ok(trellis(dev, "runs", "start", created["id"], "--json")))["runId"]
    ok(trellis(dev, "runs", "cancel", run_id))


def test_apply_says_when_it_only_enabled_or_disabled_the_workflow(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Enabling makes no new version: apply said "unchanged (version 1)" of a workflow it
    # had just enabled.
    path = gated_definition(tmp_path / "wf.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    plain = path.read_text()
    path.write_text("enabled: true\n" + plain)
    enabled = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert enabled.strip() == f"workflow {created['id']} enabled; definition unchanged (version 1)"
    path.write_text("enabled: false\n" + plain.replace("Ship it?", "Ship it now?"))
    both = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert both.strip() == f"updated workflow {created['id']} (version 2); disabled"
    again = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert again.strip() == f"workflow {created['id']} unchanged (version 2)"


def test_apply_refuses_an_enabled_that_is_not_true_or_false_and_sends_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `enabled: "yes"` was dropped on a create (a disabled workflow, no word said) and
    # the API's 400 on an update.
    name = f"cli-{uuid.uuid4().hex[:8]}"
    path = gated_definition(tmp_path / "wf.yaml", name)
    plain = path.read_text()
    path.write_text('enabled: "yes"\n' + plain)
    result = trellis(dev, "workflows", "apply", "-f", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr == f'Error: {path}: enabled is true or false (or left out), not "yes"\n'
    listed = httpx.get(f"{dev.api_url}/api/v1/workflows", params={"query": name}).json()
    assert listed["workflows"] == []
    path.write_text(plain)
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    for given in ('"yes"', "1", "null"):
        path.write_text(f"enabled: {given}\n" + plain.replace("Ship it?", "Changed?"))
        result = trellis(dev, "workflows", "apply", "-f", str(path))
        assert result.returncode == 2 and result.stderr.startswith(f"Error: {path}: enabled is")
    stored = httpx.get(f"{dev.api_url}/api/v1/workflows/{created['id']}").json()
    assert (stored["version"], stored["enabled"]) == (1, False)


def test_apply_makes_the_stored_definition_what_the_file_says(
    dev: DevProcess, tmp_path: Path
) -> None:
    # The update was the API's partial PUT: a description or maxConcurrency deleted from
    # the file kept its stored value, and apply said "unchanged".
    path = gated_definition(tmp_path / "wf.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    plain = path.read_text()
    path.write_text("description: Ships things\nmaxConcurrency: 3\n" + plain)
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    assert (created["description"], created["maxConcurrency"]) == ("Ships things", 3)
    path.write_text(plain)
    applied = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert applied.strip() == f"updated workflow {created['id']} (version 2)"
    stored = httpx.get(f"{dev.api_url}/api/v1/workflows/{created['id']}").json()
    # What a create of the file would have stored.
    assert (stored["description"], stored["maxConcurrency"]) == (None, 8)
    assert ok(trellis(dev, "workflows", "apply", "-f", str(path))).strip() == (
        f"workflow {created['id']} unchanged (version 2)"
    )
    # A required field left out is refused before anything is sent (exit 2, as a file
    # the API would misread is), and changes nothing.
    path.write_text(yaml.safe_dump({"name": stored["name"]}))
    refused = trellis(dev, "workflows", "apply", "-f", str(path))
    assert refused.returncode == 2 and "nodes required" in refused.stderr, refused.stderr
    after = httpx.get(f"{dev.api_url}/api/v1/workflows/{created['id']}").json()
    assert after["version"] == 2


def test_apply_finds_its_workflow_by_name_past_the_first_page_of_the_search(
    dev: DevProcess, tmp_path: Path
) -> None:
    # The name was looked up in the first 100 workflows whose name contains it, newest
    # first: with 101 newer `NAME-…` ones, apply created it again (409 duplicate_entry).
    name = f"cli-{uuid.uuid4().hex[:8]}"
    path = gated_definition(tmp_path / "wf.yaml", name)
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    with httpx.Client(base_url=f"{dev.api_url}/api/v1") as api:
        for i in range(101):
            step = {"name": "S", "nodeType": "step", "executorKey": "builtin:echo"}
            answer = api.post("/workflows", json={"name": f"{name}-{i}", "nodes": [step]})
            assert answer.status_code == 201, answer.text
    again = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert again.strip() == f"workflow {created['id']} unchanged (version 1)"


def test_apply_of_a_file_whose_id_names_no_workflow_finds_it_by_name_next_time(
    dev: DevProcess, tmp_path: Path
) -> None:
    # The API gives ids: the first apply created a workflow under another id, and the
    # second, finding nothing by the file's id, created a duplicate (409).
    path = gated_definition(tmp_path / "wf.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    path.write_text(f"id: my-fixed-id-{uuid.uuid4().hex[:8]}\n" + path.read_text())
    first = trellis(dev, "workflows", "apply", "-f", str(path), "--json")
    created = json.loads(ok(first))
    assert "no workflow has the id 'my-fixed-id-" in first.stderr
    again = trellis(dev, "workflows", "apply", "-f", str(path))
    assert ok(again).strip() == f"workflow {created['id']} unchanged (version 1)"


def test_apply_of_a_file_whose_id_no_workflow_can_have_finds_it_by_name(
    dev: DevProcess, tmp_path: Path
) -> None:
    # A malformed id was a 400 "Invalid workflow id", though an id no workflow has is
    # applied by name.
    path = gated_definition(tmp_path / "wf.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    path.write_text("id: 'bad id!'\n" + path.read_text())
    again = trellis(dev, "workflows", "apply", "-f", str(path))
    assert ok(again).strip() == f"workflow {created['id']} unchanged (version 1)"
    assert "no workflow has the id 'bad id!'" in again.stderr


def test_a_file_without_nodes_or_name_is_refused_naming_them_and_changes_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Applied to an existing workflow, a file without `nodes` was the API's "nodes: must
    # not be null (omit the field to leave it unset)": the user had left it out.
    name = f"cli-{uuid.uuid4().hex[:8]}"
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(
        gated_definition(tmp_path / "wf.yaml", name)), "--json")))  # fmt: skip
    for text, missing in ((f"name: {name}\n", "nodes"), ("description: x\n", "name and nodes")):
        refused = trellis(dev, "workflows", "apply", "-f", "-", stdin=text)
        assert refused.returncode == 2, refused.stderr
        assert f"<stdin>: {missing} required (a definition file is the whole" in refused.stderr
    # Nothing, or no mapping at all, is as bad an input (it was exit 1, as if the API had
    # refused it), from a file or from stdin.
    for text in ("", "[1, 2]\n", "just words\n"):
        (tmp_path / "bad.yaml").write_text(text)
        for source, args in (
            ("<stdin>", ("-f", "-")),
            (str(tmp_path / "bad.yaml"), ("-f", str(tmp_path / "bad.yaml"))),
        ):
            refused = trellis(dev, "workflows", "apply", *args, stdin=text)
            assert refused.returncode == 2, (text, source, refused.stderr)
            assert refused.stderr == (
                f"Error: {source}: a definition is a mapping (name, nodes, …)\n"
            ), refused.stderr
    shown = json.loads(ok(trellis(dev, "workflows", "show", created["id"], "--json")))
    assert shown["version"] == 1 and len(shown["nodes"]) == 2


def test_a_file_in_snake_case_applied_again_is_unchanged(dev: DevProcess, tmp_path: Path) -> None:
    # The API takes snake_case names, but the ids of the stored nodes were carried over
    # by camelCase names only: each apply made a new version with new node ids.
    path = tmp_path / "snake.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "max_concurrency": 4, "nodes": [
                {"name": "a", "node_type": "step", "executor_key": "builtin:echo"},
                {"name": "c", "node_type": "condition", "condition_cel": "true", "true_steps": [
                    {"name": "t", "node_type": "step", "executor_key": "builtin:echo"}]}]}
        )
    )  # fmt: skip
    created = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    for _ in range(2):
        again = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
        assert again.strip() == f"workflow {created['id']} unchanged (version 1)"


def test_json_options_refuse_what_is_not_json_and_change_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    before = httpx.get(f"{dev.api_url}/api/v1/workflows/{workflow_id}/runs").json()
    for given in ("nope", "[1]"):
        # Was a traceback (JSONDecodeError; a list has no update).
        result = trellis(dev, "runs", "start", workflow_id, "--input-json", given)
        assert result.returncode == 2, result.stderr
        assert "--input-json" in result.stderr and "Traceback" not in result.stderr
    after = httpx.get(f"{dev.api_url}/api/v1/workflows/{workflow_id}/runs").json()
    assert after["pagination"]["total"] == before["pagination"]["total"]
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    step_id = wait_for_gate(dev, run_id)["stepId"]
    # Was sent as the text "not json", and became the step's output for good.
    result = trellis(dev, "approve", run_id, step_id, "--edited-output", "not json")
    assert result.returncode == 2 and "--edited-output" in result.stderr, result.stderr
    assert "not JSON" in result.stderr
    assert wait_for_gate(dev, run_id)["stepId"] == step_id  # still waiting
    ok(trellis(dev, "runs", "cancel", run_id))


def usage_error(result: subprocess.CompletedProcess[str], flag: str) -> str:
    """The one `Error:` line of a usage error (exit 2) naming `flag`, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert flag in line, line
    return line


def test_numbers_json_cannot_carry_are_usage_errors_and_nan_given_as_a_value_is_text(
    dev: DevProcess, tmp_path: Path
) -> None:
    # NaN, Infinity and 1e999 were read as floats that no JSON body carries: a traceback
    # ("Out of range float values are not JSON compliant") and exit code 1.
    workflow_id = applied_workflow(dev, tmp_path)
    runs = f"{dev.api_url}/api/v1/workflows/{workflow_id}/runs"
    before = httpx.get(runs).json()["pagination"]["total"]
    for args, flag in (
        (("--input", "x=1e999"), "--input"),
        (("--input", "x=[1, -1e999]"), "--input"),
        (("--input-json", '{"x": NaN}'), "--input-json"),
        (("--input-json", '{"x": Infinity}'), "--input-json"),
        (("--input-json", '{"x": 1e999}'), "--input-json"),
    ):
        usage_error(trellis(dev, "runs", "start", workflow_id, *args), flag)
    usage_error(
        trellis(dev, "schedules", "create", workflow_id, "--interval-seconds", "60",
                "--input", "x=1e999"),
        "--input",
    )  # fmt: skip
    assert httpx.get(runs).json()["pagination"]["total"] == before
    assert httpx.get(f"{runs.removesuffix('/runs')}/schedules").json()["schedules"] == []
    # JSON has no NaN: as a KEY=VALUE value it is the text, as any other word is.
    given = ("--input", "x=NaN", "--input", "y=-Infinity", "--json")
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, *given)))["runId"]
    run = json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))
    assert run["initialInput"] == {"x": "NaN", "y": "-Infinity"}
    step_id = wait_for_gate(dev, run_id)["stepId"]
    for args, flag in ((("--edited-output", "NaN"), "--edited-output"),
                       (("--edited-output", "[1e999]"), "--edited-output"),
                       (("--input", "count=1e999"), "--input")):  # fmt: skip
        usage_error(trellis(dev, "approve", run_id, step_id, *args), flag)
    assert wait_for_gate(dev, run_id)["stepId"] == step_id  # still waiting
    ok(trellis(dev, "runs", "cancel", run_id))


def test_apply_warns_of_each_key_the_api_would_ignore(dev: DevProcess, tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "colour": "red",
             "nodes": [{"name": "Ask", "nodeType": "step", "executorKey": "builtin:echo",
                        "requiresApproval": True}]}
        )
    )  # fmt: skip
    result = trellis(dev, "workflows", "apply", "-f", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("created workflow")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {path}: colour is not a field of a definition; ignored",
        f"warning: {path}: nodes[0].requiresApproval is not a field of a definition; ignored",
    ]
    # A definition with no such key applies without a word on stderr.
    fine = gated_definition(tmp_path / "ok.yaml", f"cli-{uuid.uuid4().hex[:8]}")
    clean = trellis(dev, "workflows", "apply", "-f", str(fine))
    assert clean.returncode == 0 and "warning" not in clean.stderr


def test_an_api_error_is_one_line_and_exit_code_1(dev: DevProcess) -> None:
    result = trellis(dev, "runs", "show", "no-such-run")
    assert result.returncode == 1
    assert "404 resource_not_found: Run 'no-such-run' not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_watch_that_cannot_follow_its_run_exits_3_not_as_a_failed_run(
    dev: DevProcess,
) -> None:
    # Exit code 1 said "the run failed" for an unknown id too: a script could not tell.
    for run_id in ("no-such-run", "a/b"):
        result = trellis(dev, "runs", "watch", run_id)
        assert result.returncode == WATCH_FAILED, result.stderr
        [line] = result.stderr.splitlines()
        assert line.startswith("Error: "), line
    assert (
        "404 resource_not_found: Run 'no-such-run' not found"
        in trellis(dev, "runs", "watch", "no-such-run").stderr
    )


def test_a_url_that_is_not_the_api_is_one_line_not_a_traceback(dev: DevProcess) -> None:
    # The console's address (copied from the browser) answers 200 with its page: the CLI
    # read it as JSON and died with a JSONDecodeError traceback.
    console = f"{dev.api_url}/console"
    for args, code in (
        (("workflows", "list"), 1),
        (("runs", "show", "run-1"), 1),
        (("runs", "watch", "run-1"), WATCH_FAILED),
    ):
        result = trellis(dev, *args, TRELLIS_URL=console)
        assert result.returncode == code, args
        [line] = result.stderr.splitlines()
        assert line.startswith(f"Error: {console}/api/v1/"), line
        assert line.endswith("not JSON: is it the Trellis API? set TRELLIS_URL or --url"), line


def test_an_id_is_sent_as_that_id_never_as_another_path(dev: DevProcess, tmp_path: Path) -> None:
    # Ids were put in the URL as given: `ID/runs` read a list of runs as a workflow (a
    # traceback), `OTHER/../ID` enabled ID, and `x?page=2` asked for the run `x`.
    target = json.loads(
        ok(trellis(dev, "workflows", "apply", "-f",
                   str(gated_definition(tmp_path / "t.yaml", f"cli-{uuid.uuid4().hex[:8]}")),
                   "--json"))
    )["id"]  # fmt: skip
    for args in (
        ("workflows", "show", f"{target}/runs"),
        ("workflows", "enable", f"no-such-workflow/../{target}"),
        ("runs", "show", "../workflows"),
    ):
        result = trellis(dev, *args)
        assert result.returncode == 1, (args, result.stdout)
        assert result.stderr == f"Error: {args[-1]!r} is not an id: ids have no '/'\n", args
    assert not json.loads(ok(trellis(dev, "workflows", "show", target, "--json")))["enabled"]
    for args, what in ((("runs", "show", "x?page=2"), "run"), (("runs", "show", ".."), "run"),
                       (("workflows", "show", "x#y"), "workflow")):  # fmt: skip
        result = trellis(dev, *args)
        assert result.returncode == 1, args
        assert f"400 invalid_request: Invalid {what} id {args[-1]!r}" in result.stderr, args


def test_run_output_shows_its_text_as_written(dev: DevProcess, tmp_path: Path) -> None:
    # The output line was JSON with `ensure_ascii`: "Hello, 日本!" read "Hello, \u65e5\u672c!".
    path = tmp_path / "hello.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}",
             "nodes": [{"name": "Greet", "nodeType": "step", "executorKey": "builtin:echo",
                        "config": {"greeting": "Hello, {{ input.who }}!"}}]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    ok(trellis(dev, "workflows", "enable", workflow_id["id"]))
    run_id = json.loads(
        ok(trellis(dev, "runs", "start", workflow_id["id"], "--input", "who=日本", "--json"))
    )["runId"]
    assert ok(trellis(dev, "runs", "watch", run_id)).strip().endswith("completed")
    shown = ok(trellis(dev, "runs", "show", run_id))
    assert '"greeting":"Hello, 日本!"' in shown, shown


def with_ctrl_c() -> None:
    """In the child: SIGINT's default. pytest-xdist's workers ignore SIGINT, and a Python
    started with it ignored never raises KeyboardInterrupt (so Ctrl-C did nothing)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def watched_on_a_terminal(dev: DevProcess, run_id: str, until: str) -> tuple[int, str]:
    """`trellis runs watch` on a pseudo-terminal (its live view) until `until` is shown and
    a second more, then Ctrl-C: its exit code and what it showed, without colour codes."""
    main, child = pty.openpty()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "runs", "watch", run_id],
        env={**dev.env, "TRELLIS_URL": dev.api_url, "COLUMNS": "200"}, cwd=REPO,
        stdin=child, stdout=child, stderr=child, start_new_session=True, preexec_fn=with_ctrl_c,
    )  # fmt: skip
    os.close(child)
    shown = b""
    try:
        deadline = time.monotonic() + 30
        stop_at: float | None = None
        while watcher.poll() is None and time.monotonic() < (stop_at or deadline):
            if select.select([main], [], [], 0.1)[0]:
                try:
                    shown += os.read(main, 65536)
                except OSError:  # the watch ended by itself, closing its terminal
                    break
            if stop_at is None and until.encode() in shown:
                stop_at = time.monotonic() + 1.0
        watcher.send_signal(signal.SIGINT)
        # Read on while it ends: a watcher whose last writes fill the terminal's buffer
        # would otherwise block on them and never exit.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                ready = select.select([main], [], [], 0.2)[0]
                chunk = os.read(main, 65536) if ready else b""
            except OSError:
                chunk = b""
            shown += chunk
            if not chunk and watcher.poll() is not None:
                break
        code = watcher.wait(timeout=1)
    finally:
        watcher.kill()
        os.close(main)
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode(errors="replace"))


def test_the_live_view_of_a_run_at_a_gate_says_it_awaits_approval(
    dev: DevProcess, tmp_path: Path
) -> None:
    # The live view's head took the run's status from `run_*` events only: a run waiting at
    # a gate (its `awaiting_approval` event) was shown as `running` for as long as it waited.
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    code, shown = watched_on_a_terminal(dev, run_id, until="waiting at Ask")
    heads = re.findall(rf"run {run_id}  (\w+)", shown)
    assert heads and heads[-1] == "awaiting_approval", shown
    # And its node run, drawn while the run waits: the view was drawn once per event, so
    # the events that came last before a quiet spell (the gate's) stayed undrawn.
    assert re.search(r"Ask\W+awaiting_approval", shown), shown
    assert code == 130 and "Traceback" not in shown  # Ctrl-C ends the watch quietly
    ok(trellis(dev, "runs", "cancel", run_id))


def test_ctrl_c_ends_a_watch_quietly(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "runs", "watch", run_id],
            env={**dev.env, "TRELLIS_URL": dev.api_url}, cwd=REPO, stdout=stdout, stderr=stderr,
            preexec_fn=with_ctrl_c,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while "awaiting_approval" not in out.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
            watcher.send_signal(signal.SIGINT)
            code = watcher.wait(timeout=10)
        finally:
            watcher.kill()
    assert "awaiting_approval" in out.read_text()
    assert code == 130 and "Traceback" not in err.read_text(), err.read_text()
    ok(trellis(dev, "runs", "cancel", run_id))


def test_a_watch_whose_reader_went_away_ends_quietly_with_exit_141(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `trellis runs watch RUN | head -n 3`: the write after `head` left raised
    # BrokenPipeError, which click turned into exit 1, the exit of a run that failed.
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    gate = wait_for_gate(dev, run_id)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "runs", "watch", run_id],
        env={**dev.env, "TRELLIS_URL": dev.api_url}, cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert watcher.stdout is not None and watcher.stderr is not None
        read = [watcher.stdout.readline() for _ in range(3)]  # `head -n 3`
        assert all(line.endswith("\n") for line in read), read
        watcher.stdout.close()  # and `head` exits
        # The run goes on: the watch's next line finds no reader.
        ok(trellis(dev, "approve", run_id, gate["stepId"]))
        code = watcher.wait(timeout=30)
        err = watcher.stderr.read()
    finally:
        watcher.kill()
    assert (code, err) == (141, "")


def test_a_command_whose_reader_went_away_ends_quietly_with_exit_141(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `trellis workflows list | true`, the reader gone before the first line: exit 1.
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    for args in (["workflows", "list"], ["workflows", "list", "--json"],
                 ["runs", "list", workflow_id], ["runs", "show", run_id], ["approvals"],
                 ["runs", "watch", run_id, "--json"]):  # fmt: skip
        command = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            env={**dev.env, "TRELLIS_URL": dev.api_url}, cwd=REPO, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert command.stdout is not None
            command.stdout.close()  # before it starts: it writes ~0.5 s later, at the earliest
            _, err = command.communicate(timeout=30)
        finally:
            command.kill()
        assert (command.returncode, err) == (141, ""), args
    ok(trellis(dev, "runs", "cancel", run_id))


def test_a_large_json_answer_whose_reader_went_away_ends_with_exit_141(tmp_path: Path) -> None:
    # `trellis runs show RUN --json | head -c 10` of a 43 MB answer: written in one write,
    # cut short at 64 KiB when `head` left, which Python took without raising: exit 0, the
    # output cut, as if it had all been read.
    body = json.dumps({"id": "run-1", "finalOutput": "x" * 43_000_000}).encode()
    with _answering(200, body) as (url, _):
        command = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "runs", "show", "run-1", "--json"],
            env=trellis_env(tmp_path, TRELLIS_URL=url), cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert command.stdout is not None
            assert command.stdout.read(10) == body[:10]  # `head -c 10`
            command.stdout.close()  # and `head` exits
            _, err = command.communicate(timeout=60)
        finally:
            command.kill()
    assert (command.returncode, err) == (141, b"")


def test_apply_of_a_file_naming_a_key_twice_is_refused_naming_it_and_changes_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    # PyYAML (and json) kept the last of two `config:` (or `name:`) without a word.
    name = f"twice-{uuid.uuid4().hex[:8]}"
    twice = tmp_path / "twice.yaml"
    twice.write_text(
        f"name: {name}\nnodes:\n  - name: Greet\n    nodeType: step\n"
        "    executorKey: builtin:echo\n    config: {a: 1}\n    config: {b: 2}\n"
    )
    as_json = tmp_path / "twice.json"
    as_json.write_text(f'{{"name": "{name}", "nodes": [],\n "name": "{name}-b"}}')
    for path, key, where, first in ((twice, "config", "line 7, column 5", 6),
                                    (as_json, "name", "line 2, column 2", 1)):  # fmt: skip
        result = trellis(dev, "workflows", "apply", "-f", str(path))
        assert result.returncode == 1, result.stdout
        assert result.stderr == (
            f"Error: {path}: not valid YAML or JSON at {where}: "
            f"the key {key!r} is given twice in one mapping (first at line {first})\n"
        )
    assert name not in httpx.get(f"{dev.api_url}/api/v1/workflows", params={"query": name}).text
    # A run's input from a JSON file: a usage error naming the flag and the key.
    workflow_id = applied_workflow(dev, tmp_path)
    given = tmp_path / "input.json"
    given.write_text('{"who": "Ada", "who": "Bob"}')
    refused = trellis(dev, "runs", "start", workflow_id, "--input-json", f"@{given}")
    assert refused.returncode == 2, refused.stdout
    says = "Error: Invalid value for --input-json: the key 'who' is given twice in one object"
    assert refused.stderr.strip().endswith(says), refused.stderr
    repeated = trellis(
        dev, "runs", "start", workflow_id, "--input", "who=Ada", "--input", "who=Bob"
    )
    assert repeated.returncode == 2, repeated.stdout
    assert repeated.stderr.strip().endswith(
        "Error: Invalid value for --input: 'who' given twice: give each key once"
    ), repeated.stderr
    runs = httpx.get(f"{dev.api_url}/api/v1/workflows/{workflow_id}/runs").json()["runs"]
    assert runs == []


def test_a_refused_definition_names_each_problem_once(dev: DevProcess, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: refused\nnodes:\n  - name: S\n    nodeType: step\n"
        "    executorKey: builtin:echo\n"
        "    humanReview: {onReject: sometimes, timeoutSeconds: -1}\n"
        "  - name: T\n    nodeType: loop\n"
    )
    result = trellis(dev, "workflows", "apply", "-f", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith("Error: 400"), result.stderr
    for problem in ("nodes[0].humanReview.onReject", "nodes[0].humanReview.timeoutSeconds"):
        assert result.stderr.count(problem) == 1, result.stderr
    # Problems found once the fields parse (`path: message` too): each said once as well.
    bad.write_text(
        "name: refused\nnodes:\n  - {name: S, nodeType: step}\n  - {name: T, nodeType: loop}\n"
    )
    result = trellis(dev, "workflows", "apply", "-f", str(bad))
    assert result.returncode == 1
    for problem in ("executorKey or a2aPool", "need loopConfig", "need at least 1 child"):
        assert result.stderr.count(problem) == 1, result.stderr


def api_run(dev: DevProcess, run_id: str) -> dict[str, Any]:
    run: dict[str, Any] = httpx.get(f"{dev.api_url}/api/v1/runs/{run_id}").json()
    return run


def test_feedback_without_reject_is_refused_and_decides_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `--feedback why` alone confirmed the gate and the API dropped the feedback: only a
    # rejection records it.
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    step_id = wait_for_gate(dev, run_id)["stepId"]
    for extra in ((), ("--choice", "a"), ("--input", "a=1"), ("--edited-output", "1")):
        result = trellis(dev, "approve", run_id, step_id, "--feedback", "why", *extra)
        assert usage_error(result, "--feedback").endswith(
            "--feedback goes with --reject: only a rejection records it"
        ), extra
    assert wait_for_gate(dev, run_id)["stepId"] == step_id  # still waiting
    ok(trellis(dev, "approve", run_id, step_id, "--reject", "--feedback", "why"))

    def recorded() -> list[Any]:
        return [r.get("rejectionFeedback") for r in api_run(dev, run_id)["resolvedRequirements"]]

    deadline = time.monotonic() + 30
    while recorded() != ["why"]:
        assert time.monotonic() < deadline, "the rejection's feedback was not recorded"
        time.sleep(0.2)


def test_a_bad_decision_is_refused_with_the_api_message(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    result = trellis(dev, "approve", run_id, "no-such-step")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: 4")
    ok(trellis(dev, "runs", "cancel", run_id))


def test_an_unreachable_api_says_where_it_looked(tmp_path: Path) -> None:
    env = trellis_env(tmp_path, TRELLIS_URL="http://127.0.0.1:9")
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "workflows", "list"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert "cannot reach the Trellis API at http://127.0.0.1:9" in result.stderr


def test_a_url_that_is_no_url_is_a_usage_error_for_every_command(tmp_path: Path) -> None:
    # httpx.InvalidURL is no httpx.HTTPError: `http://127.0.0.1:abc` was a traceback and
    # exit code 1, for `runs watch` too (1 says the run failed); a URL without a scheme
    # was tried (and a watch waited its whole patience for it).
    for url in ("http://127.0.0.1:abc", "http://[::1", "127.0.0.1:8000", "http://"):
        for args in (("workflows", "list"), ("runs", "watch", "run-1"), ("approvals",)):
            for env, flag in ((trellis_env(tmp_path, TRELLIS_URL=url), ()),
                              (trellis_env(tmp_path), ("--url", url))):  # fmt: skip
                line = usage_error(run_cli([*args, *flag], env), "--url / TRELLIS_URL")
                assert f"'{url}' is not the URL of an API" in line, line


def test_a_watch_waits_for_an_unreachable_api_as_long_as_its_patience(tmp_path: Path) -> None:
    env = trellis_env(tmp_path, TRELLIS_URL="http://127.0.0.1:9")
    watch = [sys.executable, "-m", "app.cli", "runs", "watch", "some-run"]
    started = time.monotonic()
    result = subprocess.run(
        [*watch, "--patience", "1"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 3
    assert "cannot reach the Trellis API at http://127.0.0.1:9 (ConnectError) for 1 s" in (
        result.stderr
    )
    assert time.monotonic() - started < 30  # not the default 120 s
    refused = subprocess.run(
        [*watch, "--patience", "-1"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "--patience" in refused.stderr


def test_a_token_is_sent_as_a_bearer_header(tmp_path: Path) -> None:
    seen: list[str | None] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            pages = {"total": 0, "page": 1, "perPage": 50, "totalPages": 0}
            body = json.dumps({"workflows": [], "pagination": pages}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        env = trellis_env(tmp_path, TRELLIS_TOKEN="from-env")
        for args, expected in (
            ([], "Bearer from-env"),
            (["--token", "from-flag"], "Bearer from-flag"),
        ):
            result = subprocess.run(
                [sys.executable, "-m", "app.cli", "workflows", "list", "--url", url, *args],
                env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            assert seen[-1] == expected
    finally:
        server.shutdown()


class _RestartingApi:
    """A stand-in API that ends a run's event stream cleanly after its first event, as an
    API shutting down does, refuses connections for a moment (the restart), then comes back
    on the same port and sends the rest of the events after the `Last-Event-ID` it is given."""

    def __init__(self, port: int = 0, phase: str = "first") -> None:
        self.phase = phase  # first stream -> "down" (shutting down) -> "back" (restarted)
        self.resumed_after: list[str | None] = []
        self.first_stream_done = threading.Event()
        self.server = self._serve(port)
        self.port = self.server.server_address[1]

    def _serve(self, port: int) -> http.server.ThreadingHTTPServer:
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.endswith("/events"):
                    self._events()
                elif api.phase == "down":
                    self._json(503, {"error": {"code": "service_unavailable", "message": "x"}})
                else:
                    status = "completed" if api.phase == "done" else "running"
                    self._json(200, {"id": "run-x", "workflowDefinitionId": "wf",
                                     "status": status, "nodeRuns": []})  # fmt: skip

            def _events(self) -> None:
                if api.phase == "down":
                    self._json(503, {"error": {"code": "service_unavailable", "message": "x"}})
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                # Each phase changes before its event is sent: a client that has the event
                # may ask for the run at once, before this thread runs on (a loaded machine
                # answered "running" to the watcher that had just read run_completed).
                if api.phase == "first":
                    api.phase = "down"
                    self._event(1, "run_started", "running")
                    api.first_stream_done.set()
                    return  # HTTP/1.0: closing the connection ends the stream cleanly
                api.resumed_after.append(self.headers.get("Last-Event-ID"))
                api.phase = "done"
                self._event(2, "run_completed", "completed")

            def _event(self, event_id: int, kind: str, status: str) -> None:
                event = {"type": kind, "runId": "run-x", "status": status, "id": event_id}
                data = json.dumps({**event, "timestamp": "2026-01-01T00:00:00Z"})
                self.wfile.write(f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n".encode())
                self.wfile.flush()

            def _json(self, code: int, body: Any) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def restart(self, down_seconds: float) -> None:
        self.server.shutdown()
        self.server.server_close()
        time.sleep(down_seconds)
        self.phase = "back"
        self.server = self._serve(self.port)


def test_watch_resumes_after_the_api_restarts(tmp_path: Path) -> None:
    """`trellis dev` restarted (or an API replica deployed) under a watcher: the API ends the
    stream cleanly and is unreachable for a moment; the watch resumes after the last event
    it saw and exits 0 when the run completes, rather than failing while the run goes on."""
    api = _RestartingApi()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "runs", "watch", "run-x",
         "--url", f"http://127.0.0.1:{api.port}"],
        env=trellis_env(tmp_path), cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert api.first_stream_done.wait(30)
        api.restart(down_seconds=1.5)
        out, err = watcher.communicate(timeout=30)
    finally:
        watcher.kill()
        api.server.shutdown()
        api.server.server_close()
    assert watcher.returncode == 0, err
    assert api.resumed_after == ["1"]
    assert "run_started" in out and "run_completed" in out
    assert out.strip().endswith("run run-x completed")


def test_a_watch_started_while_the_api_restarts_waits_for_it(tmp_path: Path) -> None:
    """`trellis runs watch` started in the moment an API is down (a restart, a deploy):
    it waits for the API, as it does when a stream drops later, instead of exiting 1 at
    once with "cannot reach the Trellis API" while the run goes on."""
    port = free_port()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "runs", "watch", "run-x",
         "--url", f"http://127.0.0.1:{port}"],
        env=trellis_env(tmp_path), cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    api: _RestartingApi | None = None
    try:
        # Until the CLI has started and found nothing listening (a fixed 3 s was not always
        # enough for a loaded machine to start the CLI at all).
        assert watcher.stderr is not None
        said = watcher.stderr.readline()
        assert "not answering" in said, (said, watcher.poll())
        api = _RestartingApi(port, phase="back")
        out, err = watcher.communicate(timeout=30)
    finally:
        watcher.kill()
        if api is not None:
            api.server.shutdown()
            api.server.server_close()
    assert watcher.returncode == 0, said + err
    assert "run_completed" in out
    assert out.strip().endswith("run run-x completed")


def test_apply_of_a_file_that_does_not_parse_is_one_line_and_exit_code_1(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\nnodes: []\n")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"name: \xff\xfe\n")
    env = trellis_env(tmp_path, TRELLIS_URL="http://127.0.0.1:9")  # never asked: it fails first
    for path, says in ((broken, "not valid YAML or JSON at line"), (binary, "not UTF-8 text")):
        result = subprocess.run(
            [sys.executable, "-m", "app.cli", "workflows", "apply", "-f", str(path)],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith(f"Error: {path}: {says}"), result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


class _QuietRunApi:
    """An API whose run waits at a gate (no events) while the API restarts again and again:
    every stream after the first ends without an event, until the run ends."""

    def __init__(self, completes_after: float) -> None:
        self.completes_at = time.monotonic() + completes_after
        self.streams = 0
        self.completion_streamed = False
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                done = time.monotonic() >= api.completes_at
                if self.path.endswith("/events"):
                    api.streams += 1
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    if api.streams == 1:
                        self._event(1, "awaiting_approval", "awaiting_approval")
                    elif done:
                        self._event(2, "run_completed", "completed")
                        api.completion_streamed = True
                    return  # HTTP/1.0: closing ends the stream, as a restarting API does
                # Completed only once a stream said so: a run found ended between two
                # streams ends the watch without its last event, which is not the point here
                # (and on a loaded machine the clock could make it so).
                status = "completed" if api.completion_streamed else "awaiting_approval"
                raw = json.dumps(
                    {"id": "run-x", "workflowDefinitionId": "wf", "status": status}
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _event(self, event_id: int, kind: str, status: str) -> None:
                data = json.dumps({"type": kind, "runId": "run-x", "status": status})
                self.wfile.write(f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n".encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def test_a_watch_of_a_quiet_run_outlasts_api_restarts_spread_over_its_patience() -> None:
    """Seen with `trellis runs watch` on a run held at a gate: each API restart ended its
    stream, each time an API answered again, and yet after 120 s without an event the
    watch gave up ("lost the event stream … could not resume it"). Patience is for an API
    that does not answer, not for a run that is quiet."""
    api = _QuietRunApi(completes_after=4.0)
    client = TrellisApi(api.url)
    try:
        kinds = [e.event for e in client.events("/workflows/wf/runs/run-x", patience=1.5)]
    finally:
        client.close()
        api.server.shutdown()
        api.server.server_close()
    assert kinds == ["awaiting_approval", "run_completed"]
    assert api.streams > 2  # it resumed across several stream ends


def test_apply_from_stdin_names_it_stdin_in_its_errors(tmp_path: Path) -> None:
    # The file was named `-`: "Error: -: not valid YAML or JSON …".
    env = trellis_env(tmp_path, TRELLIS_URL="http://127.0.0.1:9")  # never asked: it fails first
    for given, says, code in (("name: [unclosed\n", "not valid YAML or JSON at line", 1),
                              ("- a list\n", "a definition is a mapping", 2)):  # fmt: skip
        result = subprocess.run(
            [sys.executable, "-m", "app.cli", "workflows", "apply", "-f", "-"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=60, input=given,
        )  # fmt: skip
        assert result.returncode == code, result.stderr
        assert result.stderr.startswith(f"Error: <stdin>: {says}"), result.stderr


def test_the_root_help_lists_the_client_commands_settings(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "--help"],
        env=trellis_env(tmp_path), cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    settings = result.stdout.split("Settings per command")[1]
    rows = {line.split()[0]: line.split(None, 1)[1] for line in settings.splitlines()[1:] if line}
    for variable in ("TRELLIS_URL", "TRELLIS_TOKEN"):
        assert rows[variable] == "workflows, runs, approvals, approve, schedules, catalog", settings


def completed_loop_run(dev: DevProcess, iterations: int) -> str:
    """A completed run of a loop of `iterations` echo steps (one node run more: the loop)."""
    body = {
        "name": f"Long loop {uuid.uuid4().hex[:8]}",
        "nodes": [{"name": "Again", "nodeType": "loop",
                   "loopConfig": {"maxIterations": iterations},
                   "children": [{"name": "Echo", "nodeType": "step",
                                 "executorKey": "builtin:echo"}]}],
    }  # fmt: skip
    api = f"{dev.api_url}/api/v1"
    workflow_id = httpx.post(f"{api}/workflows", json=body).json()["id"]
    httpx.post(f"{api}/workflows/{workflow_id}/toggle", json={"enabled": True})
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    deadline = time.monotonic() + 30
    while api_run(dev, run_id)["status"] != "completed":
        assert time.monotonic() < deadline, api_run(dev, run_id)["status"]
        time.sleep(0.2)
    return run_id


def test_run_show_counts_a_long_runs_node_runs_and_shows_the_latest(dev: DevProcess) -> None:
    # 3,000 identical rows, pending approvals and the output after all of them: a run of
    # many node runs is counted, and its latest 50 shown, each with its iteration.
    run_id = completed_loop_run(dev, 60)
    shown = ok(trellis(dev, "runs", "show", run_id, COLUMNS="1000"))
    assert "node runs: 61 (61 completed); the latest 50 shown, --json has every one" in shown
    assert shown.count("iteration ") == 50 and "iteration 59" in shown
    assert len(json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))["nodeRuns"]) == 61


def test_the_live_view_of_a_long_run_shows_its_latest_node_runs_as_they_end(
    dev: DevProcess,
) -> None:
    # Each event redrew a table of every node run (a 3,000-node run fell minutes behind),
    # and the view began from the final node runs, which the replayed events set running.
    run_id = completed_loop_run(dev, 60)
    code, shown = watched_on_a_terminal(dev, run_id, until=f"run {run_id} completed")
    assert code == 0, shown
    assert "61/61 node runs ended" in shown
    assert "the latest 30 node runs (31 before them)" in shown
    assert f"run {run_id} completed" in shown


def test_workflows_show_labels_each_branch_as_the_console_does(dev: DevProcess) -> None:
    # A condition's true and false steps, a router's routes and a parallel node's branches
    # were shown as plain siblings: nothing told which ran when.
    from tests.builders import condition, echo, parallel, router

    nodes = [
        condition("Check", "input.vip", echo("Welcome"), falseSteps=[echo("Decline")]),
        router("Route", "'left'", {"left": [echo("GoLeft")], "right": [echo("GoRight")]}),
        parallel("Both", echo("Mail"), echo("Text")),
    ]
    body = {"name": f"Branches {uuid.uuid4().hex[:8]}", "nodes": nodes}
    workflow_id = httpx.post(f"{dev.api_url}/api/v1/workflows", json=body).json()["id"]
    shown = ok(trellis(dev, "workflows", "show", workflow_id, COLUMNS="1000"))
    for label in ("if true: Welcome", "if false: Decline", "route “left”: GoLeft",
                  "route “right”: GoRight", "branch 1: Mail", "branch 2: Text"):  # fmt: skip
        assert label in shown, (label, shown)


def test_the_latest_node_runs_of_a_run_grown_since_it_was_counted(dev: DevProcess) -> None:
    # `runs show` and the live view read a run's last pages by the count they had: a run
    # that grew since was shown the wrong 50 node runs.
    body = {"name": f"grown-{uuid.uuid4().hex[:8]}", "nodes": [
        {"name": "Again", "nodeType": "loop", "loopConfig": {"maxIterations": 70},
         "children": [{"name": "Echo", "nodeType": "step", "executorKey": "builtin:echo"}]},
    ]}  # fmt: skip
    api = TrellisApi(dev.api_url)
    try:
        workflow_id = api.post("/workflows", body).data["id"]
        api.post(f"/workflows/{workflow_id}/toggle", {"enabled": True})
        run_id = api.post(f"/workflows/{workflow_id}/runs", {"initialInput": {}}).data["runId"]
        path = f"/workflows/{workflow_id}/runs/{run_id}"
        deadline = time.monotonic() + 30
        while api.get(path, nodeRuns="summary").data["status"] != "completed":
            assert time.monotonic() < deadline, "the run did not complete"
            time.sleep(0.2)
        every = api.get(f"{path}/nodes", perPage=200).data["nodeRuns"]
        session = Session(api, as_json=False, console=Console())
        # Counted when it had 20 node runs; it has 71 now.
        latest, total = latest_node_runs(session, path, 50, 20)
    finally:
        api.close()
    assert total == len(every) == 71
    assert [n["id"] for n in latest] == [n["id"] for n in every[-50:]]


def test_approve_decides_a_gate_of_a_run_whose_node_runs_are_too_large_to_read(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `approve` read the whole run detail to find the run's path and its form: past
    # TRELLIS_MAX_RESPONSE_BYTES it failed (400 response_too_large) while `runs show`,
    # which reads the summary, offered the decision.
    loop = {
        "name": "Loop",
        "nodeType": "loop",
        "loopConfig": {"maxIterations": 60},
        "children": [
            {
                "name": "E",
                "nodeType": "step",
                "executorKey": "builtin:echo",
                "config": {"pad": "x" * 200},
            }
        ],
    }
    gate = {
        "name": "Gate",
        "nodeType": "step",
        "executorKey": "builtin:echo",
        "humanReview": {"requiresConfirmation": True},
    }
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True,
                                    "nodes": [loop, gate]}))  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    deadline = time.monotonic() + 60
    while not (run := json.loads(ok(trellis(dev, "runs", "show", run_id, "--json"))))[
        "pendingRequirements"
    ]:
        assert time.monotonic() < deadline, "the run never reached its gate"
        time.sleep(0.2)
    step_id = run["pendingRequirements"][0]["stepId"]
    # A second API on the same store and Temporal, answering at most 10 KB of node runs.
    temporal = f"127.0.0.1:{dev.env['TRELLIS_TEMPORAL_PORT']}"
    small = {
        **dev.env,
        "TRELLIS_API_PORT": str(free_port()),
        "TRELLIS_MAX_RESPONSE_BYTES": "10000",
        "TRELLIS_TEMPORAL_ADDRESS": temporal,
    }
    url = f"http://127.0.0.1:{small['TRELLIS_API_PORT']}"
    api = subprocess.Popen([sys.executable, "-m", "app.cli", "api"], env=small, cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the second API did not start"
            time.sleep(0.1)
        whole = httpx.get(f"{url}/api/v1/runs/{run_id}")
        assert whole.status_code == 400 and "response_too_large" in whole.text  # the premise
        ok(trellis(dev, "approve", run_id, step_id, TRELLIS_URL=url))
    finally:
        api.terminate()
        api.wait(15)
    deadline = time.monotonic() + 60
    while json.loads(ok(trellis(dev, "runs", "show", run_id, "--json")))["status"] != "completed":
        assert time.monotonic() < deadline, "the run did not complete after its approval"
        time.sleep(0.2)
