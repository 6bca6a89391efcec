"""What the CLI tells an approver about a gate, against a real `trellis dev`: the API's
refusal of a decision said once, and what a gate asks in the words the console uses."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from tests.peers.serving import ServedApp
from tests.platform.conftest import DevProcess, running_dev, trellis_env
from tests.platform.test_cli_for_people import ok, trellis, wait_for_gate
from tests.support.cli_in_process import run_cli


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    """One `trellis dev` for the module."""
    with running_dev(trellis_env(tmp_path_factory.mktemp("cli-gates") / "data")) as process:
        yield process


# A form with a free-text field that must be given and a field of two allowed values.
FORM = {"requiresUserInput": True, "userInputSchema": [
    {"name": "approverNote", "fieldType": "string", "required": True},
    {"name": "plan", "fieldType": "string", "required": True, "defaultValue": "gold",
     "allowedValues": ["gold", "silver"]},
]}  # fmt: skip


def gated_run(dev: DevProcess, tmp_path: Path, review: dict[str, Any]) -> tuple[str, str]:
    """A run waiting at the gate `review` of its one step: (run id, step id)."""
    step = {"name": "Create account", "nodeType": "step", "executorKey": "builtin:echo"}
    return run_at_gate(dev, tmp_path, {**step, "humanReview": review})


def run_at_gate(dev: DevProcess, tmp_path: Path, node: dict[str, Any]) -> tuple[str, str]:
    """A run of the one node `node`, waiting at its gate: (run id, step id)."""
    path = tmp_path / "gate.yaml"
    path.write_text(
        yaml.safe_dump({"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True, "nodes": [node]})
    )
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    return run_id, str(wait_for_gate(dev, run_id)["stepId"])


def test_a_refused_form_names_each_problem_once(dev: DevProcess, tmp_path: Path) -> None:
    # The API says a form's problems as `path message` and lists each in its details: the
    # CLI added every detail again as `path: message`.
    run_id, step_id = gated_run(dev, tmp_path, FORM)
    refused = trellis(dev, "approve", run_id, step_id, "--input", "plan=bronze")
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr.strip() == (
        "Error: 400 invalid_request: userInput.approverNote is required; "
        "userInput.plan must be one of ['gold', 'silver']"
    )
    ok(trellis(dev, "runs", "cancel", run_id))


def test_a_detail_the_message_does_not_hold_is_still_said() -> None:
    details = [
        {"path": "userInput.a", "message": "is required"},
        {"path": "nodes[0]", "message": "needs a name"},
        {"path": "userInput.b", "message": "is not a number"},
    ]
    body = {"error": {"code": "invalid_request", "details": details,
                      "message": "userInput.a is required; nodes[0]: needs a name"}}  # fmt: skip
    app = FastAPI()

    @app.get("/api/v1/workflows")
    async def refuse() -> JSONResponse:
        return JSONResponse(body, status_code=400)

    served = ServedApp(app).start()
    try:
        env = {"PATH": os.environ["PATH"], "TRELLIS_URL": served.base_url}
        refused = run_cli(["workflows", "list"], env)
    finally:
        served.stop()
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Error: 400 invalid_request: userInput.a is required; nodes[0]: needs a name; "
        "userInput.b: is not a number"
    )


def test_run_show_names_the_values_a_field_allows(dev: DevProcess, tmp_path: Path) -> None:
    # `plan (str, default "gold")`: the approver learnt the choices from a 400.
    run_id, _ = gated_run(dev, tmp_path, FORM)
    shown = ok(trellis(dev, "runs", "show", run_id, COLUMNS="200"))
    expected = '--input: approverNote* (str), plan (str, one of "gold" | "silver", default "gold")'
    assert expected in shown, shown
    ok(trellis(dev, "runs", "cancel", run_id))


def inbox_row(dev: DevProcess, run_id: str) -> str:
    """The inbox table's lines of the run's gate (a cell of two lines makes two)."""
    lines = ok(trellis(dev, "approvals", "--per-page", "100", COLUMNS="400")).splitlines()
    at = next(i for i, line in enumerate(lines) if run_id in line)
    return "\n".join(lines[at : at + 2])


def test_an_iteration_review_is_named_as_the_console_names_it(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Its requirement sets `requiresConfirmation`: NEEDS and ASKS said "Confirmation".
    loop = {"name": "Again", "nodeType": "loop", "loopConfig": {"maxIterations": 3},
            "humanReview": {"requiresIterationReview": True,
                            "iterationReviewMessage": "Another round?"},
            "children": [{"name": "Echo", "nodeType": "step",
                          "executorKey": "builtin:echo"}]}  # fmt: skip
    run_id, _ = run_at_gate(dev, tmp_path, loop)
    shown = ok(trellis(dev, "runs", "show", run_id, COLUMNS="200"))
    assert "Iteration review" in shown and "Confirmation" not in shown, shown
    assert "confirm: continue the loop; --reject: end it" in shown, shown
    row = inbox_row(dev, run_id)
    assert "Iteration review" in row and "Confirmation" not in row, row
    ok(trellis(dev, "runs", "cancel", run_id))


def test_the_inbox_marks_a_gate_whose_run_is_paused(dev: DevProcess, tmp_path: Path) -> None:
    # The console says "run paused" (a decision waits for the resume); the CLI said nothing.
    run_id, _ = gated_run(dev, tmp_path, {"requiresConfirmation": True})
    assert "run paused" not in inbox_row(dev, run_id)
    ok(trellis(dev, "runs", "pause", run_id))
    assert "run paused" in inbox_row(dev, run_id)
    ok(trellis(dev, "runs", "resume", run_id))
    assert "run paused" not in inbox_row(dev, run_id)
    ok(trellis(dev, "runs", "cancel", run_id))
