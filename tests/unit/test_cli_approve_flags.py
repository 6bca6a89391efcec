"""`trellis approve` refuses flags that make different decisions (one would silently win),
and sends the gate opening it read."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner
from fastapi import FastAPI, Request

from app.cli.main import cli
from tests.peers.serving import ServedApp
from tests.support.cli_in_process import run_cli
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


SHOWN = {"nodeRunId": "run-1.lp.1", "iteration": 0, "itemIndex": None, "kind": "iteration_review"}


def _gate(step_id: str, **shown: Any) -> dict[str, Any]:
    return {"stepId": step_id, "nodeRunId": f"run-1.{step_id}.1", "iteration": None,
            "itemIndex": None, "kind": "before", **shown}  # fmt: skip


@pytest.mark.parametrize(
    ("pending", "sent"),
    [
        # The one opening shown: the decision is for it (409 once another opened).
        ([_gate("lp", iteration=0, kind="iteration_review"), _gate("other")], SHOWN),
        ([], None),  # none open: the API says so
        ([_gate("lp", itemIndex=0), _gate("lp", itemIndex=1)], None),  # which, it cannot say
        ([_gate("lp", nodeRunId=None)], None),  # recorded before gates named their node run
    ],
)
def test_approve_sends_the_gate_opening_it_read(
    pending: list[dict[str, Any]], sent: dict[str, Any] | None
) -> None:
    # It sent none: a keyless CLI decision was taken for whatever opened after its read.
    bodies: list[dict[str, Any]] = []
    app = FastAPI()

    @app.get("/api/v1/runs/run-1")
    async def run() -> dict[str, Any]:
        return {"id": "run-1", "workflowDefinitionId": "wf-1", "pendingRequirements": pending}

    @app.post("/api/v1/workflows/wf-1/runs/run-1/approve")
    async def decide(request: Request) -> dict[str, Any]:
        bodies.append(await request.json())
        return {"runId": "run-1", "status": "running", "resolvedStepId": "lp", "message": "ok"}

    served = ServedApp(app).start()
    try:
        result = run_cli(["approve", "run-1", "lp"], {"TRELLIS_URL": served.base_url})
    finally:
        served.stop()
    assert result.returncode == 0, result.stderr
    [body] = bodies
    assert body.get("gate") == sent
    assert (body["stepId"], body["resolution"]) == ("lp", "confirm")
