"""The contract's resolution x requirement compatibility table, every cell, over HTTP."""

from typing import Any

import pytest

from tests.builders import echo
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.platform import Platform

FORM = [{"name": "who", "fieldType": "string", "required": False, "defaultValue": "ada"}]
GATES: dict[str, dict[str, Any]] = {
    "confirmation": echo("g", {"requiresConfirmation": True}),
    "user_input": echo("g", {"requiresUserInput": True, "userInputSchema": FORM}),
    "output_review": echo("g", {"requiresOutputReview": True}),
    "route_selection": {
        "id": "g",
        "name": "g",
        "nodeType": "router",
        "conditionCel": "'a'",
        "humanReview": {"requiresUserInput": True},
        "choices": [{"name": "a", "steps": [echo("in-a")]}, {"name": "b", "steps": [echo("in-b")]}],
    },
    "iteration_review": {
        "id": "g",
        "name": "g",
        "nodeType": "loop",
        "loopConfig": {"maxIterations": 1},
        "humanReview": {"requiresIterationReview": True},
        "children": [echo("tick")],
    },
}
BODIES: dict[str, dict[str, Any]] = {
    "confirm": {},
    "reject": {"feedback": "no"},
    "edit": {"editedOutput": {"edited": True}},
    "user_input": {"userInput": {"who": "grace"}},
    "route_select": {"selectedChoices": ["b"]},
}
# Which resolutions each kind of requirement accepts (contract section 10).
VALID = {
    "confirmation": {"confirm", "reject"},
    "user_input": {"confirm", "reject", "user_input"},
    "output_review": {"confirm", "reject", "edit"},
    "route_selection": {"confirm", "reject", "route_select"},
    "iteration_review": {"confirm", "reject"},
}


@pytest.mark.parametrize("kind", list(GATES))
@pytest.mark.parametrize("resolution", list(BODIES))
async def test_resolution_against_requirement(
    platform: Platform, kind: str, resolution: str
) -> None:
    wf, run_id = await start(platform, [GATES[kind]])
    await wait_for_gate(platform, wf, run_id, "g")
    response = await approve(
        platform, wf, run_id, stepId="g", resolution=resolution, **BODIES[resolution]
    )
    if resolution in VALID[kind]:
        assert response.status_code == 200, response.text
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed"
        assert run["resolvedRequirements"][0]["resolution"] == resolution
    else:
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "invalid_request"
        run = await wait_for_gate(platform, wf, run_id, "g")
        assert run["status"] == "awaiting_approval" and run["resolvedRequirements"] == []
