"""The step activity: run one step through its executor, record each attempt, classify errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.executors.base import Executor, PermanentError, StepCall
from activities.projections import write_node_run
from activities.store.base import Store
from temporal_workflows.contracts import EXECUTE_STEP, PLAN_STEP, StepInput, StepOutput, StepPlan
from temporal_workflows.retry import PERMANENT_ERROR_TYPE

# Step outputs travel in workflow history; keep well under Temporal's 2 MB payload limit.
MAX_OUTPUT_BYTES = 1_000_000
HEARTBEAT_EVERY_SECONDS = 5.0


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class StepActivities:
    def __init__(self, store: Store, executor: Executor) -> None:
        self._store = store
        self._executor = executor

    @activity.defn(name=EXECUTE_STEP)
    async def execute_step(self, step: StepInput) -> StepOutput:
        """Call the step's executor once (one Temporal attempt) and record the attempt."""
        info = activity.info()
        attempt = info.attempt
        base = {
            "id": step.node_run_id,
            "workflow_run_id": step.run_id,
            "node_id": step.node_id,
            "node_name": step.node_name,
            "node_type": "step",
            "attempt": attempt,
        }
        await self._record(
            step,
            {
                **base,
                "status": "running",
                "started_at": _now(),
                "finished_at": None,
                "input_snapshot": step.config,
                "error": None,
                "rev": attempt * 10 + 1,
            },
            "node_started",
        )
        call = _call(step, attempt, (lambda *d: None) if info.is_local else activity.heartbeat)
        try:
            outcome = await self._with_heartbeats(call, info.is_local)
            _check_size(outcome.output)
        except asyncio.CancelledError:
            await self._record(
                step,
                {
                    **base,
                    "status": "cancelled",
                    "finished_at": _now(),
                    "error": "cancelled",
                    "rev": attempt * 10 + 9,
                },
                "node_cancelled",
            )
            raise
        except PermanentError as exc:
            await self._record_error(step, base, attempt, str(exc))
            raise ApplicationError(
                str(exc), type=PERMANENT_ERROR_TYPE, non_retryable=True
            ) from None
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            await self._record_error(step, base, attempt, message)
            raise ApplicationError(message, type=type(exc).__name__) from None
        await self._record(
            step,
            {
                **base,
                "status": "completed",
                "finished_at": _now(),
                "output_snapshot": outcome.output,
                "error": None,
                "resolved_executor": outcome.resolved_executor,
                "rev": attempt * 10 + 3,
            },
            "node_completed",
        )
        return StepOutput(
            output=outcome.output, attempt=attempt, resolved_executor=outcome.resolved_executor
        )

    async def _with_heartbeats(self, call: StepCall, is_local: bool) -> Any:
        # A background heartbeat lets Temporal deliver cancellation to any executor
        # and notice a dead worker within the heartbeat timeout.
        if is_local:
            return await self._executor.execute(call)
        beat = asyncio.create_task(_heartbeat_forever())
        try:
            return await self._executor.execute(call)
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def _record_error(
        self, step: StepInput, base: dict[str, Any], attempt: int, message: str
    ) -> None:
        # The attempt's error is visible at once; the workflow writes the final status.
        await self._record(
            step, {**base, "status": "running", "error": message, "rev": attempt * 10 + 2}, None
        )

    async def _record(
        self, step: StepInput, fields: dict[str, Any], event_type: str | None
    ) -> None:
        event = None
        if event_type is not None:
            event = {
                "type": event_type,
                "runId": step.run_id,
                "nodeRunId": step.node_run_id,
                "nodeId": step.node_id,
                "nodeName": step.node_name,
                "status": fields["status"],
                "attempt": fields["attempt"],
                "timestamp": _now(),
            }
        await write_node_run(self._store, fields, event)

    @activity.defn(name=PLAN_STEP)
    async def plan_step(self, step: StepInput) -> StepPlan:
        """The agent a pool step will try first, so the Web UI can show it before it runs."""
        plan = getattr(self._executor, "plan", None)
        if plan is None:
            return StepPlan()
        try:
            resolved = await plan(_call(step, attempt=1, heartbeat=lambda *d: None))
        except Exception:  # the step itself will report the problem
            resolved = None
        return StepPlan(resolved_executor=resolved)

    def all(self) -> list[Any]:
        return [self.execute_step, self.plan_step]


def _call(step: StepInput, attempt: int, heartbeat: Any) -> StepCall:
    return StepCall(
        run_id=step.run_id,
        workflow_id=step.workflow_id,
        node_id=step.node_id,
        node_name=step.node_name,
        node_run_id=step.node_run_id,
        executor_key=step.executor_key,
        a2a_pool=step.a2a_pool,
        config=step.config,
        context=step.context,
        attempt=attempt,
        heartbeat=heartbeat,
    )


async def _heartbeat_forever() -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(HEARTBEAT_EVERY_SECONDS)


def _check_size(output: Any) -> None:
    size = len(json.dumps(output, default=str))
    if size > MAX_OUTPUT_BYTES:
        raise PermanentError(f"step output is {size} bytes; the limit is {MAX_OUTPUT_BYTES} bytes")
