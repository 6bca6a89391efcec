"""Long runs continue as new at top-level boundaries, carrying their state, and finish.

The steps are remote (`builtin:delay`): inline built-ins add no history events.
"""

from typing import Any

from activities.run_start import start_run_workflow
from activities.store.records import RunRecord
from temporal_workflows.definition import WorkflowSpec
from tests.support.platform import Platform


async def _start(platform: Platform, run_id: str, nodes: list[dict[str, Any]]) -> str:
    spec = WorkflowSpec.model_validate({"name": run_id, "nodes": nodes})
    wf = await platform.create(
        {"nodes": [{"name": "x", "nodeType": "step", "executorKey": "builtin:echo"}]}
    )
    record = RunRecord(
        id=run_id,
        workflow_definition_id=wf,
        workflow_version=1,
        definition_snapshot=spec,
        initial_input={"seed": 7},
    )
    await platform.store.insert_run(record)
    await start_run_workflow(
        platform.client, record, task_queue=platform.task_queue, continue_as_new_after_events=40
    )
    return wf


async def _executions(platform: Platform, run_id: str) -> int:
    return len([e async for e in platform.client.list_workflows(f"WorkflowId = '{run_id}'")])


async def test_a_long_top_level_loop_continues_as_new_and_completes(
    platform: Platform,
) -> None:
    wf = await _start(
        platform,
        "run-can-loop-1",
        [
            {
                "id": "L",
                "name": "L",
                "nodeType": "loop",
                "loopConfig": {"maxIterations": 60},
                "children": [
                    {
                        "id": "t",
                        "name": "tick",
                        "nodeType": "step",
                        "executorKey": "builtin:delay",
                        "config": {"i": "{{ iteration }}", "seconds": 0},
                    }
                ],
            },
            {
                "id": "after",
                "name": "after",
                "nodeType": "step",
                "executorKey": "builtin:transform",
                "config": {"map": {"n": "size(previous_step_content)", "seed": "input.seed"}},
            },
        ],
    )
    run = await platform.wait(wf, "run-can-loop-1", within=60)
    assert run["status"] == "completed", run
    assert run["finalOutput"] == {"n": 60, "seed": 7}
    loops = [n for n in run["nodeRuns"] if n["nodeName"] == "L"]
    assert len(loops) == 1 and loops[0]["status"] == "completed"
    assert loops[0]["inputSnapshot"] == {"iterations": 60, "endedBy": "maxIterations"}
    ticks = [n for n in run["nodeRuns"] if n["nodeName"] == "tick"]
    assert len(ticks) == 60 and len({n["id"] for n in ticks}) == 60
    assert [n["inputSnapshot"]["i"] for n in ticks] == list(range(60))
    assert await _executions(platform, "run-can-loop-1") > 1


async def test_a_long_sequence_carries_earlier_outputs_across(platform: Platform) -> None:
    steps = [
        {
            "id": f"s{i}",
            "name": f"s{i}",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"i": i, "seconds": 0},
        }
        for i in range(40)
    ]
    steps.append(
        {
            "id": "last",
            "name": "last",
            "nodeType": "step",
            "executorKey": "builtin:transform",
            "config": {"map": {"first": "previous_step_outputs.s0.sleptSeconds"}},
        }
    )
    wf = await _start(platform, "run-can-seq-1", steps)
    run = await platform.wait(wf, "run-can-seq-1", within=60)
    assert run["status"] == "completed", run
    assert run["finalOutput"] == {"first": 0.0}
    assert len(run["nodeRuns"]) == 41
    assert await _executions(platform, "run-can-seq-1") > 1
