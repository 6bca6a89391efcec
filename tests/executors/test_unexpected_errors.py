"""An executor that fails in a way it did not foresee (a bug, a library's own exception) is
an attempt failed with the exception's text. That text is kept (the node run's error, the
run's errorSummary, Temporal's history) as the worker's log shows it: with the secrets
the logs mask (a `Bearer` token, `password=`) masked."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.executors.base import StepCall, StepOutcome
from activities.steps import StepActivities
from activities.store.sqlite import SqliteStore
from temporal_workflows.contracts import StepInput
from tests.store.builders import run, workflow

TOKEN = "abc.def.ghi-91f2"


class _Broken:
    """An executor with a bug: it raises what no executor means to raise."""

    async def execute(self, call: StepCall) -> StepOutcome:
        raise RuntimeError(f"upstream said 401 to Bearer {TOKEN} password=hunter2")


async def test_an_unforeseen_exceptions_text_is_kept_with_its_secrets_masked(
    tmp_path: Path,
) -> None:
    store = SqliteStore(tmp_path / "trellis.db")
    await store.connect()
    try:
        wf = workflow()
        await store.create_workflow(wf)
        record = await store.insert_run(run(wf.id, status="running"))
        step = StepInput(
            run_id=record.id, workflow_id=wf.id, node_run_id=f"{record.id}:a", node_id="a",
            node_name="A", executor_key="builtin:echo",
        )  # fmt: skip
        with pytest.raises(ApplicationError) as raised:
            await ActivityEnvironment().run(StepActivities(store, _Broken()).execute_step, step)
        node_run = await store.get_node_run(step.node_run_id)
    finally:
        await store.close()
    assert raised.value.type == "RuntimeError"
    assert raised.value.message == "upstream said 401 to Bearer *** password=***"
    assert node_run is not None and node_run.error == raised.value.message
