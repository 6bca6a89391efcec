"""An edited output is a step's output: one larger than a step may return is refused (400)
and decides nothing; it was taken, and the run went on with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.api.helpers import assert_error
from tests.builders import echo
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.support.platform import Platform, executor_registry, running_platform

LIMIT = 50_000
REVIEW = {"requiresOutputReview": True, "onReject": "cancel"}


@pytest.fixture
async def limited(temporal_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Platform]:
    async with (
        executor_registry() as registry,
        running_platform(
            temporal_env.client, tmp_path, registry, settings_extra={"max_payload_bytes": LIMIT}
        ) as platform,
    ):
        yield platform


async def test_an_edit_larger_than_a_step_output_is_400_and_decides_nothing(
    limited: Platform,
) -> None:
    wf, run_id = await start(limited, [echo("draft", REVIEW, text="v1")])
    before = await wait_for_gate(limited, wf, run_id, "draft")
    big = {"text": "x" * LIMIT}
    refused = await approve(
        limited, wf, run_id, stepId="draft", resolution="edit", editedOutput=big
    )
    assert_error(refused, 400, "invalid_request", "editedOutput", str(LIMIT), "nothing was")
    now = (await limited.api.get(f"/api/v1/workflows/{wf}/runs/{run_id}")).json()
    assert now["pendingRequirements"] == before["pendingRequirements"]
    assert now["resolvedRequirements"] == []

    fits = {"text": "x" * (LIMIT - 100)}
    made = await approve(limited, wf, run_id, stepId="draft", resolution="edit", editedOutput=fits)
    assert made.status_code == 200, made.text
    run = await limited.wait(wf, run_id)
    assert run["status"] == "completed" and run["finalOutput"] == fits
