"""The worker's counts: runs by workflow and end, step attempts by executor kind, gates,
read-model write lag — each counted once, where the side effect lands."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from prometheus_client import CollectorRegistry
from temporalio.testing import ActivityEnvironment

from activities.metrics import RunMetrics
from activities.projections import ProjectionActivities
from activities.run_start import new_run_record
from app.reconciler import Reconciler
from temporal_workflows.contracts import ProjectionBatch, RunProjection
from temporal_workflows.read_model import run_event
from tests.builders import condition, delay, echo, http_step, parallel
from tests.hitl.helpers import approve, control, start, wait_for_gate
from tests.metrics.conftest import Metered
from tests.support.polling import eventually

STARTED = "trellis_runs_started_total"
ENDED = "trellis_runs_ended_total"
STEP = "trellis_step_duration_seconds"
STATUSES = ("completed", "cancelled", "failed")


async def test_a_completed_run_is_counted_started_and_completed_once(metered: Metered) -> None:
    p = metered.platform
    run = await p.run({"nodes": [echo("a"), http_step("call", f"{p.peer_url}/echo/k")]})
    assert run["status"] == "completed"
    wf = run["workflowDefinitionId"]
    await eventually(lambda: metered.value(ENDED, workflow_id=wf, status="completed") == 1)
    assert metered.value(STARTED, workflow_id=wf) == 1
    assert metered.value(ENDED, workflow_id=wf, status="failed") == 0
    # builtin:echo runs inline in the workflow; builtin:http is an attempt of the step activity.
    assert metered.value(f"{STEP}_count", executor_kind="builtin", outcome="completed") == 1


async def test_failed_and_cancelled_runs_are_counted_under_their_end(metered: Metered) -> None:
    p = metered.platform
    failing = await p.create({"nodes": [http_step("bad", f"{p.peer_url}/status/404")]})
    failed = await p.trigger(failing)
    assert (await p.wait(failing, failed))["status"] == "failed"
    waiting, cancelled = await start(p, [delay("slow", 30)])
    await p.wait(waiting, cancelled, {"running"})
    assert (await control(p, waiting, cancelled, "cancel")).status_code == 200
    assert (await p.wait(waiting, cancelled))["status"] == "cancelled"

    await eventually(lambda: metered.value(ENDED, workflow_id=waiting, status="cancelled") == 1)
    await eventually(lambda: metered.value(ENDED, workflow_id=failing, status="failed") == 1)
    assert metered.value(STARTED, workflow_id=failing) == 1
    assert metered.value(STARTED, workflow_id=waiting) == 1
    # A 404 is a permanent error: one attempt, failed; the delay's attempt was cancelled.
    assert metered.value(f"{STEP}_count", executor_kind="builtin", outcome="failed") == 1
    await eventually(
        lambda: metered.value(f"{STEP}_count", executor_kind="builtin", outcome="cancelled") == 1
    )


async def test_an_attempt_cut_off_by_its_timeout_is_counted_failed_and_logged(
    metered: Metered, caplog: pytest.LogCaptureFixture
) -> None:
    # It was counted `cancelled`, like a run an operator cancelled, and logged nothing of
    # its own: a slow tool could not be told from a cancel.
    p = metered.platform
    slow = delay("slow", 8) | {"stepConfig": {"timeoutSeconds": 1, "maxRetries": 0}}
    with caplog.at_level("WARNING", logger="trellis.steps"):
        run = await p.run({"nodes": [slow]})
    assert run["status"] == "failed", run
    await eventually(
        lambda: metered.value(f"{STEP}_count", executor_kind="builtin", outcome="failed") == 1
    )
    assert metered.value(f"{STEP}_count", executor_kind="builtin", outcome="cancelled") == 0
    [line] = [r for r in caplog.records if "attempt 1 failed" in r.getMessage()]
    assert line.getMessage() == (
        "step 'slow' attempt 1 failed: step timed out (start-to-close, timeoutSeconds 1)"
        " waiting for builtin:delay"
    )


async def test_a_run_s_end_is_logged_once_also_when_no_step_failed(
    metered: Metered, caplog: pytest.LogCaptureFixture
) -> None:
    # A run failed by the workflow itself (a condition's CEL error) logged nothing.
    p = metered.platform
    broken = condition("cond", "input.missing.deep > 1", echo("t"))
    with caplog.at_level("INFO", logger="trellis.runs"):
        failed = await p.run({"nodes": [broken]})
        completed = await p.run({"nodes": [echo("a")]})
        await eventually(lambda: len([r for r in caplog.records if "run c" in r.getMessage()]))
    assert failed["status"] == "failed" and completed["status"] == "completed"
    lines = [r for r in caplog.records if r.getMessage().startswith(("run failed", "run compl"))]
    ends = {r.run_id: r for r in lines}  # type: ignore[attr-defined]
    assert len(lines) == len(ends) == 2, lines  # once each
    assert ends[failed["id"]].levelname == "WARNING"
    assert ends[failed["id"]].getMessage() == f"run failed: {failed['errorSummary']}"
    assert ends[completed["id"]].getMessage() == "run completed"


async def test_a_gate_is_counted_opened_and_its_wait_observed_at_the_decision(
    metered: Metered,
) -> None:
    p = metered.platform
    wf, run_id = await start(p, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(p, wf, run_id, "send")
    await eventually(lambda: metered.value("trellis_gates_opened_total", workflow_id=wf) == 1)
    await asyncio.sleep(0.3)
    assert (await approve(p, wf, run_id, stepId="send", resolution="confirm")).status_code == 200
    assert (await p.wait(wf, run_id))["status"] == "completed"

    wait = "trellis_gate_wait_seconds"
    labels = {"workflow_id": wf, "resolution": "confirm"}
    await eventually(lambda: metered.value(f"{wait}_count", **labels) == 1)
    assert 0.3 <= metered.value(f"{wait}_sum", **labels) < 10
    assert metered.value("trellis_gates_opened_total", workflow_id=wf) == 1


async def test_a_gate_closed_by_its_run_s_cancel_is_observed_as_cancelled(
    metered: Metered,
) -> None:
    p = metered.platform
    wf, run_id = await start(p, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(p, wf, run_id, "send")
    await asyncio.sleep(0.3)
    assert (await control(p, wf, run_id, "cancel")).status_code == 200
    assert (await p.wait(wf, run_id))["status"] == "cancelled"

    wait = "trellis_gate_wait_seconds"
    labels = {"workflow_id": wf, "resolution": "cancelled"}
    await eventually(lambda: metered.value(f"{wait}_count", **labels) == 1)
    assert 0.3 <= metered.value(f"{wait}_sum", **labels) < 10
    assert metered.value(ENDED, workflow_id=wf, status="cancelled") == 1


async def test_a_gate_whose_run_failed_meanwhile_is_observed_as_failed(metered: Metered) -> None:
    p = metered.platform
    gate = echo("send", {"requiresConfirmation": True})
    # The other branch fails once the gate is open (a condition holds its steps in order).
    late = condition("late", "true", delay("d", 0.5), http_step("bad", f"{p.peer_url}/status/404"))
    wf, run_id = await start(p, [parallel("both", gate, late)])
    await wait_for_gate(p, wf, run_id, "send")
    assert (await p.wait(wf, run_id))["status"] == "failed"

    labels = {"workflow_id": wf, "resolution": "failed"}
    await eventually(lambda: metered.value("trellis_gate_wait_seconds_count", **labels) == 1)


async def test_a_gate_of_a_run_terminated_in_temporal_is_observed_by_the_reconciler(
    metered: Metered,
) -> None:
    # An operator terminates the run in the Web UI: the workflow never writes its end, the
    # reconciler does (failed), and the gate it waited at closes with it.
    p = metered.platform
    reconciler = Reconciler(
        p.client, p.store, task_queue=p.task_queue, interval=0.2, metrics=metered.metrics
    )
    wf, run_id = await start(p, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(p, wf, run_id, "send")
    await asyncio.sleep(0.3)
    await p.client.get_workflow_handle(run_id).terminate(reason="operator in Web UI")
    loop = asyncio.create_task(reconciler.run_forever())
    try:
        assert (await p.wait(wf, run_id, within=10))["status"] == "failed"
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop

    wait = "trellis_gate_wait_seconds"
    labels = {"workflow_id": wf, "resolution": "failed"}
    assert metered.value(ENDED, workflow_id=wf, status="failed") == 1
    assert metered.value(f"{wait}_count", **labels) == 1
    assert 0.3 <= metered.value(f"{wait}_sum", **labels) < 10


async def test_a_rejection_that_cancels_the_run_is_observed_once_as_reject(
    metered: Metered,
) -> None:
    p = metered.platform
    review = {"requiresConfirmation": True, "onReject": "cancel"}
    wf, run_id = await start(p, [echo("send", review), echo("after")])
    await wait_for_gate(p, wf, run_id, "send")
    assert (await approve(p, wf, run_id, stepId="send", resolution="reject")).status_code == 200
    assert (await p.wait(wf, run_id))["status"] == "cancelled"

    wait = "trellis_gate_wait_seconds"
    await eventually(lambda: metered.value(ENDED, workflow_id=wf, status="cancelled") == 1)
    assert metered.value(f"{wait}_count", workflow_id=wf, resolution="reject") == 1
    assert metered.value(f"{wait}_count", workflow_id=wf, resolution="cancelled") == 0


async def test_every_read_model_batch_observes_its_write_lag(metered: Metered) -> None:
    run = await metered.platform.run({"nodes": [echo("a")]})
    assert run["status"] == "completed"
    lag = "trellis_read_model_write_lag_seconds"
    assert metered.value(f"{lag}_count") >= 1
    # Writes wait in the outbox at most half a second by the run's clock.
    assert metered.value(f"{lag}_sum") / metered.value(f"{lag}_count") < 2


async def test_a_batch_applied_again_after_a_lost_completion_is_not_counted_twice(
    metered: Metered,
) -> None:
    # A local activity runs again when its completion was lost (a crash, a failed task):
    # the same writes land a second time, and must not count a second run.
    p = metered.platform
    wf = await p.create({"nodes": [echo("a")]}, enable=True)
    workflow = await p.store.get_workflow(wf)
    assert workflow is not None
    record = await p.store.insert_run(new_run_record(workflow, "api", {}))
    registry = CollectorRegistry()
    metrics = RunMetrics(registry)
    projections = ProjectionActivities(p.store, metrics)
    started = RunProjection(
        run_id=record.id,
        workflow_id=wf,
        rev=1,
        changes={"status": "running"},
        event=run_event("run_started", run_id=record.id, status="running", timestamp="x"),
    )
    batch = ProjectionBatch(runs=[started], order="r", first_seq=0)
    local_activity = ActivityEnvironment()  # the batch's, as its workflow runs it
    await local_activity.run(projections.record_batch, batch)
    await local_activity.run(projections.record_batch, batch)
    assert registry.get_sample_value(STARTED, {"workflow_id": wf}) == 1
    assert (await p.store.get_run(record.id)).status == "running"  # type: ignore[union-attr]


async def test_a_run_whose_refused_task_wrote_an_end_first_is_counted_ended_once(
    metered: Metered,
) -> None:
    # A decision and a cancel at once: the decision's workflow task writes `completed`,
    # Temporal refuses that task (the cancel came while it ran), and the task run again
    # writes `cancelled` over it. Both ends landed, and both were counted.
    p = metered.platform

    def ended(wf: str) -> float:
        return sum(metered.value(ENDED, workflow_id=wf, status=s) for s in STATUSES)

    for _ in range(10):
        wf, run_id = await start(p, [echo("gated", {"requiresConfirmation": True}), echo("b")])
        await wait_for_gate(p, wf, run_id, "gated")
        await asyncio.gather(
            approve(p, wf, run_id, stepId="gated", resolution="confirm"),
            control(p, wf, run_id, "cancel"),
        )
        run = await p.wait(wf, run_id, within=15)
        await eventually(lambda: ended(wf))  # noqa: B023 - awaited in this iteration
        logged = [e["type"] for e in await p.store.list_events(run_id, 0, 200)]
        if run["status"] == "cancelled" and "run_completed" in logged:
            break  # the refused task's end landed first
    else:
        pytest.skip("no decision's workflow task was refused in 10 tries")
    assert logged.index("run_completed") < logged.index("run_cancelled")
    await asyncio.sleep(0.5)  # the second end is counted (if at all) right after it lands
    # Counted once, under the end that landed first: a counter cannot take it back.
    assert ended(wf) == 1
    assert metered.value(ENDED, workflow_id=wf, status="completed") == 1
