"""Graph views: a definition as canvas nodes and edges, and a run's states overlaid on it."""

from __future__ import annotations

from typing import Any

from tests.builders import echo
from tests.support.platform import Platform

TREE = {
    "nodes": [
        echo("a") | {"position": {"x": 10, "y": 20}},
        {"id": "par", "name": "par", "nodeType": "parallel", "children": [echo("p1"), echo("p2")]},
        {
            "id": "cond",
            "name": "cond",
            "nodeType": "condition",
            "conditionCel": "input.go == true",
            "trueSteps": [echo("t1"), echo("t2")],
            "falseSteps": [echo("f1")],
        },
        {
            "id": "route",
            "name": "route",
            "nodeType": "router",
            "conditionCel": "'left'",
            "choices": [
                {"name": "left", "steps": [echo("l1")]},
                {"name": "right", "steps": [echo("r1")]},
            ],
        },
        {
            "id": "loop",
            "name": "loop",
            "nodeType": "loop",
            "loopConfig": {"maxIterations": 2},
            "children": [echo("i1"), echo("i2")],
        },
    ]
}


def edge_set(graph: dict[str, Any]) -> set[tuple[str, str, str, str | None]]:
    return {(e["source"], e["target"], e["kind"], e["choice"]) for e in graph["edges"]}


class TestWorkflowGraph:
    async def test_every_edge_kind_connects_the_tree(self, platform: Platform) -> None:
        wf = await platform.create(TREE)
        graph = (await platform.api.get(f"/api/v1/workflows/{wf}/graph")).json()
        assert edge_set(graph) == {
            ("a", "par", "sequence", None),
            ("par", "cond", "sequence", None),
            ("cond", "route", "sequence", None),
            ("route", "loop", "sequence", None),
            ("par", "p1", "parallel", None),
            ("par", "p2", "parallel", None),
            ("cond", "t1", "branch_true", None),
            ("t1", "t2", "sequence", None),
            ("cond", "f1", "branch_false", None),
            ("route", "l1", "choice", "left"),
            ("route", "r1", "choice", "right"),
            ("loop", "i1", "loop", None),
            ("i1", "i2", "sequence", None),
            ("i2", "loop", "loop_back", None),
        }

    async def test_nodes_carry_canvas_fields_and_their_container(self, platform: Platform) -> None:
        wf = await platform.create(TREE)
        graph = (await platform.api.get(f"/api/v1/workflows/{wf}/graph")).json()
        nodes = {n["id"]: n for n in graph["nodes"]}
        assert len(nodes) == 14 and graph["version"] == 1 and graph["workflowId"] == wf
        assert nodes["a"] == {
            "id": "a",
            "name": "a",
            "nodeType": "step",
            "position": {"x": 10, "y": 20},
            "executorKey": "builtin:echo",
            "parentId": None,
        }
        assert nodes["t2"]["parentId"] == "cond" and nodes["i1"]["parentId"] == "loop"

    async def test_an_unknown_workflow_is_404(self, platform: Platform) -> None:
        assert (await platform.api.get("/api/v1/workflows/nope/graph")).status_code == 404


class TestRunGraph:
    async def test_each_node_shows_its_latest_node_run_and_untaken_nodes_are_null(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(TREE)
        run = await platform.wait(wf, await platform.trigger(wf, {"go": True}))
        url = f"/api/v1/workflows/{wf}/runs/{run['id']}/graph"
        graph = (await platform.api.get(url)).json()
        assert graph["runId"] == run["id"] and graph["status"] == "completed"
        nodes = {n["id"]: n for n in graph["nodes"]}
        assert nodes["t1"]["status"] == "completed" and nodes["t1"]["attempt"] == 1
        assert nodes["t1"]["nodeRunId"] == f"{run['id']}.t1.1"
        assert nodes["t1"]["startedAt"] and nodes["t1"]["finishedAt"]
        # The loop ran twice: the overlay is its second node run.
        assert nodes["i2"]["nodeRunId"] == f"{run['id']}.i2.2"
        for untaken in ("f1", "r1"):
            assert {k: nodes[untaken][k] for k in ("status", "nodeRunId", "attempt")} == {
                "status": None,
                "nodeRunId": None,
                "attempt": None,
            }

    async def test_a_run_graph_names_the_runs_newest_event(self, platform: Platform) -> None:
        # A live view built from it follows the stream after it: the console's run page
        # read a long run's whole log (40,004 events, 14 MB) for what the graph shows.
        wf = await platform.create(TREE)
        run = await platform.wait(wf, await platform.trigger(wf, {"go": True}))
        base = f"/api/v1/workflows/{wf}/runs/{run['id']}"
        graph = (await platform.api.get(f"{base}/graph")).json()
        events = await platform.store.list_events(run["id"], 0, 1000)
        assert graph["lastEventId"] == events[-1]["id"]
        after = await platform.api.get(
            f"{base}/events", headers={"Last-Event-ID": str(graph["lastEventId"])}
        )
        assert "event:" not in after.text  # nothing the graph does not show

    async def test_a_run_graph_is_the_runs_version_not_the_live_one(
        self, platform: Platform
    ) -> None:
        wf = await platform.create({"nodes": [echo("old")]})
        run = await platform.wait(wf, await platform.trigger(wf))
        await platform.api.put(f"/api/v1/workflows/{wf}", json={"nodes": [echo("new")]})
        url = f"/api/v1/workflows/{wf}/runs/{run['id']}/graph"
        graph = (await platform.api.get(url)).json()
        assert [n["id"] for n in graph["nodes"]] == ["old"] and graph["version"] == 1
