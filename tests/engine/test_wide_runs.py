"""Wide runs: a parallel node with 500 children runs them all, bounded by maxConcurrency."""

from __future__ import annotations

from tests.support.platform import Platform


async def test_a_parallel_node_with_five_hundred_children_completes(platform: Platform) -> None:
    children = [
        {
            "id": f"c{i}",
            "name": f"c{i}",
            "nodeType": "step",
            "executorKey": "builtin:transform",
            "config": {"map": {"i": f"{i}"}},
        }
        for i in range(500)
    ]
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel", "maxConcurrency": 500,
           "children": children}  # fmt: skip
    run = await platform.run({"nodes": [fan]})
    assert run["status"] == "completed", run["errorSummary"]
    assert run["finalOutput"] == {f"c{i}": {"i": i} for i in range(500)}
    assert len(run["nodeRuns"]) == 501
