"""What a Temporal Schedule starts: a tiny workflow that asks one activity to start a run.

The schedule cannot start the interpreter directly: whether a run starts depends on
the definition in the store (it may be disabled or gone), and the run record must be
written before its workflow starts. The workflow fixes the run id (so activity retries
start one run), the activity does the rest.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.base import CamelModel

SCHEDULE_WORKFLOW_TYPE = "TrellisScheduleTrigger"
START_SCHEDULED_RUN = "start_scheduled_run"
START_TIMEOUT = timedelta(seconds=30)


def trigger_workflow_id(schedule_id: str) -> str:
    """The id of the workflow the schedule starts (Temporal adds each firing's time to it)."""
    return f"{schedule_id}-run"


class ScheduleTriggerInput(CamelModel):
    """The schedule's action argument: which workflow to run, with what, as configured."""

    schedule_id: str
    workflow_id: str
    initial_input: dict[str, Any] = Field(default_factory=dict)
    # The schedule as given to the API (Temporal keeps a cron only as calendar specs).
    cron: str | None = None
    interval_seconds: int | None = None
    time_zone: str = "UTC"
    default_gate_timeout_seconds: float | None = None


class ScheduledRunRequest(CamelModel):
    run_id: str
    trigger: ScheduleTriggerInput


class ScheduledRunResult(CamelModel):
    """The run started, or why none was."""

    run_id: str | None = None
    skipped_reason: str | None = None


@workflow.defn(name=SCHEDULE_WORKFLOW_TYPE)
class ScheduleTrigger:
    @workflow.run
    async def run(self, inp: ScheduleTriggerInput) -> ScheduledRunResult:
        request = ScheduledRunRequest(run_id=f"run-{workflow.uuid4()}", trigger=inp)
        result: ScheduledRunResult = await workflow.execute_activity(
            START_SCHEDULED_RUN,
            request,
            result_type=ScheduledRunResult,
            start_to_close_timeout=START_TIMEOUT,
            retry_policy=RetryPolicy(maximum_interval=timedelta(seconds=30), maximum_attempts=20),
        )
        detail = (
            f"started {result.run_id}" if result.run_id else f"skipped: {result.skipped_reason}"
        )
        workflow.set_current_details(detail)
        return result
