"""Retry, single-node rerun and replay create child runs linked to their source run."""

from __future__ import annotations

from typing import Any

from tests.builders import delay, http_step, loop, node, transform
from tests.support.platform import Platform


def runs_url(workflow_id: str, run_id: str = "") -> str:
    return f"/api/v1/workflows/{workflow_id}/runs" + (f"/{run_id}" if run_id else "")


def failing_then(platform: Platform, key: str) -> dict[str, Any]:
    """A flow: two counted calls, a step that fails on its first run only, a counted call."""
    return {
        "nodes": [
            http_step("first", f"{platform.peer_url}/echo/{key}-first"),
            http_step("second", f"{platform.peer_url}/echo/{key}-second"),
            {
                "id": "flaky",
                "name": "flaky",
                "nodeType": "step",
                "executorKey": "builtin:http",
                "config": {"url": f"{platform.peer_url}/flaky/{key}-flaky?failures=1"},
            },
            http_step("last", f"{platform.peer_url}/echo/{key}-last"),
        ]
    }


async def failed_run(platform: Platform, key: str) -> tuple[str, dict[str, Any]]:
    wf = await platform.create(failing_then(platform, key))
    run = await platform.wait(wf, await platform.trigger(wf, {"who": "ada"}))
    assert run["status"] == "failed", run
    return wf, run


class TestRetry:
    async def test_reuses_completed_steps_without_calling_their_executors(
        self, platform: Platform
    ) -> None:
        wf, source = await failed_run(platform, "retry")
        response = await platform.api.post(runs_url(wf, source["id"]) + "/retry")
        assert response.status_code == 200, response.text  # contract 3.2: 200, not 202
        body = response.json()
        assert body["triggerSource"] == "retry" and body["parentRunId"] == source["id"]
        child = await platform.wait(wf, body["runId"])
        assert child["status"] == "completed"
        assert platform.peer.calls["retry-first"] == 1
        assert platform.peer.calls["retry-second"] == 1
        assert platform.peer.calls["retry-flaky"] == 2
        assert platform.peer.calls["retry-last"] == 1

    async def test_reused_node_runs_point_at_the_source_node_runs(self, platform: Platform) -> None:
        wf, source = await failed_run(platform, "pointers")
        response = await platform.api.post(runs_url(wf, source["id"]) + "/retry")
        child = await platform.wait(wf, response.json()["runId"])
        source_ids = {n["nodeId"]: n["id"] for n in source["nodeRuns"]}
        by_node = {n["nodeId"]: n for n in child["nodeRuns"]}
        assert by_node["first"]["reusedFromNodeRunId"] == source_ids["first"]
        assert by_node["second"]["reusedFromNodeRunId"] == source_ids["second"]
        assert by_node["flaky"]["reusedFromNodeRunId"] is None
        assert child["resolvedDependencies"] == [
            {
                "nodeId": "first",
                "resolution": "reuse_previous_output",
                "sourceNodeRunId": source_ids["first"],
            },
            {
                "nodeId": "second",
                "resolution": "reuse_previous_output",
                "sourceNodeRunId": source_ids["second"],
            },
            {"nodeId": "flaky", "resolution": "rerun", "sourceNodeRunId": None},
            {"nodeId": "last", "resolution": "rerun", "sourceNodeRunId": None},
        ]

    async def test_runs_on_the_source_snapshot_not_the_live_definition(
        self, platform: Platform
    ) -> None:
        wf, source = await failed_run(platform, "snapshot")
        updated = await platform.api.put(
            f"/api/v1/workflows/{wf}",
            json={
                "nodes": [
                    {
                        "id": "other",
                        "name": "other",
                        "nodeType": "step",
                        "executorKey": "builtin:echo",
                    }
                ]
            },
        )
        assert updated.status_code == 200, updated.text
        response = await platform.api.post(runs_url(wf, source["id"]) + "/retry")
        child = await platform.wait(wf, response.json()["runId"])
        assert child["workflowVersion"] == source["workflowVersion"] == 1
        assert [n["id"] for n in child["definitionSnapshot"]["nodes"]] == [
            "first",
            "second",
            "flaky",
            "last",
        ]
        assert child["initialInput"] == {"who": "ada"}

    async def test_a_completed_run_cannot_be_retried(self, platform: Platform) -> None:
        wf = await platform.create({"nodes": [http_step("a", f"{platform.peer_url}/echo/done")]})
        run = await platform.wait(wf, await platform.trigger(wf))
        response = await platform.api.post(runs_url(wf, run["id"]) + "/retry")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"
        assert "only a failed or cancelled run" in response.json()["error"]["message"]

    async def test_the_explicit_form_refuses_a_parent_still_going(self, platform: Platform) -> None:
        # `…/retry` refused a run still going; the contract 7 form started a `retry` child
        # of a running run beside it, reusing outputs of a run not ended (an audit).
        wf = await platform.create(
            {"nodes": [http_step("a", f"{platform.peer_url}/echo/done"), delay("wait", 30)]}
        )
        url = f"/api/v1/workflows/{wf}/runs"
        running = await platform.trigger(wf)  # pending or running while it is asked
        before = (await platform.api.get(url)).json()["pagination"]["total"]
        body = {"triggerSource": "retry", "parentRunId": running}
        response = await platform.api.post(url, json=body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "invalid_request"
        message = response.json()["error"]["message"]
        assert message.endswith(
            "only a run that ended (completed, failed or cancelled) can be the parent of a retry"
        ), message
        assert (await platform.api.get(url)).json()["pagination"]["total"] == before
        await platform.api.post(f"{url}/{running}/cancel")

    async def test_the_explicit_contract_7_form_reuses_outputs(self, platform: Platform) -> None:
        wf, source = await failed_run(platform, "explicit")
        first = next(n for n in source["nodeRuns"] if n["nodeId"] == "first")
        child_id = await platform.trigger(
            wf,
            {"who": "ada"},
            triggerSource="retry",
            parentRunId=source["id"],
            resolvedDependencies=[
                {
                    "nodeId": "first",
                    "resolution": "reuse_previous_output",
                    "sourceNodeRunId": first["id"],
                },
                {"nodeId": "second", "resolution": "rerun"},
            ],
        )
        child = await platform.wait(wf, child_id)
        assert child["status"] == "completed" and child["triggerSource"] == "retry"
        assert platform.peer.calls["explicit-first"] == 1
        assert platform.peer.calls["explicit-second"] == 2

    async def test_the_explicit_form_refuses_unknown_and_repeated_nodes(
        self, platform: Platform
    ) -> None:
        wf, source = await failed_run(platform, "refused")
        url = f"/api/v1/workflows/{wf}/runs"
        before = (await platform.api.get(url)).json()["pagination"]["total"]
        rerun = {"resolution": "rerun"}
        for deps, says in (
            ([{"nodeId": "nope", **rerun}], "node 'nope' is not a node of this workflow"),
            ([{"nodeId": "first", **rerun}, {"nodeId": "first", **rerun}], "listed twice"),
        ):
            body = {"triggerSource": "retry", "parentRunId": source["id"]}
            response = await platform.api.post(url, json={**body, "resolvedDependencies": deps})
            assert response.status_code == 400, response.text
            assert says in response.json()["error"]["message"]
        assert (await platform.api.get(url)).json()["pagination"]["total"] == before

    async def test_steps_inside_a_map_run_again_for_every_item(self, platform: Platform) -> None:
        # One cached output per node would stand in for every item: [30, 30, 30].
        items = node("items", "map", id="items", itemsCel="[1, 2, 3]")
        items["children"] = [transform("times_ten", v="item * 10")]
        flaky = f"{platform.peer_url}/flaky/map-retry?failures=1"
        wf = await platform.create({"nodes": [items, http_step("flaky", flaky)]})
        source = await platform.wait(wf, await platform.trigger(wf))
        assert source["status"] == "failed", source
        response = await platform.api.post(runs_url(wf, source["id"]) + "/retry")
        child = await platform.wait(wf, response.json()["runId"])
        assert child["status"] == "completed", child
        by_id = {n["nodeId"]: n for n in child["nodeRuns"]}
        assert by_id["items"]["outputSnapshot"] == [{"v": 10}, {"v": 20}, {"v": 30}]
        assert all(
            n["reusedFromNodeRunId"] is None
            for n in child["nodeRuns"]
            if n["nodeId"] == "times_ten"
        )
        # Listed like every step of the tree, as run again (it was left out before).
        deps = [(d["nodeId"], d["resolution"]) for d in child["resolvedDependencies"]]
        assert deps == [("times_ten", "rerun"), ("flaky", "rerun")]

    async def test_the_explicit_form_refuses_reuse_of_a_container_or_a_step_in_a_map(
        self, platform: Platform
    ) -> None:
        items = node("items", "map", id="items", itemsCel="[1, 2]")
        items["children"] = [transform("times_ten", v="item * 10")]
        bad = f"{platform.peer_url}/status/500"
        wf = await platform.create({"nodes": [items, http_step("fails", bad)]})
        source = await platform.wait(wf, await platform.trigger(wf))
        assert source["status"] == "failed", source
        url = runs_url(wf)
        before = (await platform.api.get(url)).json()["pagination"]["total"]
        for node_id in ("items", "times_ten"):
            done = next(n for n in source["nodeRuns"] if n["nodeId"] == node_id)
            dep = {
                "nodeId": node_id,
                "resolution": "reuse_previous_output",
                "sourceNodeRunId": done["id"],
            }
            body = {"triggerSource": "retry", "parentRunId": source["id"]}
            response = await platform.api.post(url, json={**body, "resolvedDependencies": [dep]})
            assert response.status_code == 400, response.text
            assert "cannot reuse a previous output" in response.json()["error"]["message"]
        assert (await platform.api.get(url)).json()["pagination"]["total"] == before


class TestNodeRerun:
    async def test_reruns_the_node_reusing_upstream_and_running_nothing_downstream(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(
            {
                "nodes": [
                    http_step(s, f"{platform.peer_url}/echo/rerun-{s}") for s in ("a", "b", "c")
                ]
            }
        )
        source = await platform.wait(wf, await platform.trigger(wf))
        response = await platform.api.post(runs_url(wf, source["id"]) + "/nodes/b/rerun")
        assert response.status_code == 202, response.text
        body = response.json()
        assert body == {
            "run_id": body["run_id"],
            "status": "pending",
            "message": f"Node 'b' rerun queued as run {body['run_id']}",
        }
        child = await platform.wait(wf, body["run_id"])
        assert child["status"] == "completed" and child["triggerSource"] == "node_rerun"
        assert child["parentRunId"] == source["id"]
        assert [n["nodeId"] for n in child["nodeRuns"]] == ["a", "b"]
        assert (platform.peer.calls["rerun-a"], platform.peer.calls["rerun-b"]) == (1, 2)
        assert platform.peer.calls["rerun-c"] == 1

    async def test_a_retry_of_a_failed_rerun_stops_after_the_same_node(
        self, platform: Platform
    ) -> None:
        flaky = f"{platform.peer_url}/flaky/stop-b?failures=2"  # fails the source and the rerun
        steps = [http_step("a", f"{platform.peer_url}/echo/stop-a"), http_step("b", flaky)]
        wf = await platform.create(
            {"nodes": [*steps, http_step("c", f"{platform.peer_url}/echo/stop-c")]}
        )
        source = await platform.wait(wf, await platform.trigger(wf))
        rerun = await platform.api.post(runs_url(wf, source["id"]) + "/nodes/b/rerun")
        failed = await platform.wait(wf, rerun.json()["run_id"])
        assert failed["status"] == "failed", failed
        url, key = runs_url(wf, failed["id"]) + "/retry", {"Idempotency-Key": "retry-rerun"}
        response = await platform.api.post(url, headers=key)
        assert response.status_code == 200, response.text
        child = await platform.wait(wf, response.json()["runId"])
        # Retried as it was asked for: up to b, never the downstream c the rerun left out.
        assert child["status"] == "completed" and [n["nodeId"] for n in child["nodeRuns"]] == [
            "a",
            "b",
        ]
        assert [d["nodeId"] for d in child["resolvedDependencies"]] == ["a", "b"]
        assert platform.peer.calls["stop-c"] == 0 and platform.peer.calls["stop-a"] == 1
        repeat = await platform.api.post(url, headers=key)
        assert repeat.status_code == 200 and repeat.json()["runId"] == child["id"], repeat.text

    async def test_a_nested_node_is_refused(self, platform: Platform) -> None:
        wf = await platform.create(
            {
                "nodes": [
                    {
                        "id": "par",
                        "name": "par",
                        "nodeType": "parallel",
                        "children": [
                            {
                                "id": "x",
                                "name": "x",
                                "nodeType": "step",
                                "executorKey": "builtin:echo",
                            },
                            {
                                "id": "y",
                                "name": "y",
                                "nodeType": "step",
                                "executorKey": "builtin:echo",
                            },
                        ],
                    }
                ]
            }
        )
        source = await platform.wait(wf, await platform.trigger(wf))
        response = await platform.api.post(runs_url(wf, source["id"]) + "/nodes/x/rerun")
        assert response.status_code == 400
        assert response.json()["error"]["message"] == "Nested node rerun is not supported."

    async def test_an_unknown_node_is_404(self, platform: Platform) -> None:
        wf = await platform.create({"nodes": [http_step("a", f"{platform.peer_url}/echo/unknown")]})
        source = await platform.wait(wf, await platform.trigger(wf))
        response = await platform.api.post(runs_url(wf, source["id"]) + "/nodes/nope/rerun")
        assert response.status_code == 404

    async def test_a_running_source_run_is_refused(self, platform: Platform) -> None:
        wf = await platform.create(
            {
                "nodes": [
                    {
                        "id": "w",
                        "name": "w",
                        "nodeType": "step",
                        "executorKey": "builtin:delay",
                        "config": {"seconds": 2},
                    }
                ]
            }
        )
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        response = await platform.api.post(runs_url(wf, run_id) + "/nodes/w/rerun")
        assert response.status_code == 400
        assert "completed or failed" in response.json()["error"]["message"]


class TestReplay:
    async def test_runs_the_live_definition_fresh_with_the_same_input(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(
            {"nodes": [http_step("a", f"{platform.peer_url}/echo/replay-a")]}
        )
        source = await platform.wait(wf, await platform.trigger(wf, {"n": 7}))
        await platform.api.put(
            f"/api/v1/workflows/{wf}",
            json={
                "nodes": [
                    http_step("a", f"{platform.peer_url}/echo/replay-a"),
                    http_step("b", f"{platform.peer_url}/echo/replay-b"),
                ]
            },
        )
        response = await platform.api.post(runs_url(wf, source["id"]) + "/replay")
        assert response.status_code == 202, response.text
        assert response.json()["triggerSource"] == "replay"
        child = await platform.wait(wf, response.json()["runId"])
        assert child["status"] == "completed" and child["workflowVersion"] == 2
        assert child["initialInput"] == {"n": 7} and child["parentRunId"] == source["id"]
        assert platform.peer.calls["replay-a"] == 2 and platform.peer.calls["replay-b"] == 1
        assert all(n["reusedFromNodeRunId"] is None for n in child["nodeRuns"])

    async def test_a_disabled_workflow_cannot_be_replayed(self, platform: Platform) -> None:
        wf = await platform.create(
            {"nodes": [http_step("a", f"{platform.peer_url}/echo/disabled")]}
        )
        source = await platform.wait(wf, await platform.trigger(wf))
        await platform.api.post(f"/api/v1/workflows/{wf}/toggle", json={"enabled": False})
        response = await platform.api.post(runs_url(wf, source["id"]) + "/replay")
        assert response.status_code == 400
        assert "Workflow is disabled" in response.json()["error"]["message"]

    async def test_a_replay_refuses_a_body_asking_for_input(self, platform: Platform) -> None:
        # Contract 14: "no additional input is accepted"; it was taken and ignored.
        wf = await platform.create({"nodes": [transform("t", v="input.x")]})
        source = await platform.wait(wf, await platform.trigger(wf, {"x": 1}))
        url = runs_url(wf, source["id"]) + "/replay"
        children = runs_url(wf, source["id"]) + "/children"
        for body in ({"initialInput": {"x": 2}}, [], "x", {"anything": None}):
            response = await platform.api.post(url, json=body)
            assert response.status_code == 400, response.text
            assert "takes no body" in response.json()["error"]["message"]
        assert (await platform.api.get(children)).json()["pagination"]["total"] == 0
        # A trigger's fields sent as null are left out there, and so here.
        for accepted in (None, {}, {"initialInput": None, "triggerSource": None}):
            response = await platform.api.post(url, json=accepted)
            assert response.status_code == 202, response.text
        assert (await platform.api.get(children)).json()["pagination"]["total"] == 3

    async def test_a_retry_and_a_rerun_refuse_a_body_asking_for_input(
        self, platform: Platform
    ) -> None:
        # Contract 13: "Request Body: Empty"; a new initialInput sent to either was taken
        # (200/202) and ignored, the child running on the source's input (an audit).
        wf, source = await failed_run(platform, "bodies")
        base = runs_url(wf, source["id"])
        children = base + "/children"
        for path, what in (("/retry", "A retry"), ("/nodes/first/rerun", "A node rerun")):
            for body in ({"initialInput": {"who": "bob"}}, {"anything": 1}):
                response = await platform.api.post(base + path, json=body)
                assert response.status_code == 400, response.text
                assert response.json()["error"]["message"].startswith(f"{what} takes no body")
        assert (await platform.api.get(children)).json()["pagination"]["total"] == 0
        assert (await platform.api.post(base + "/retry", json={})).status_code == 200
        assert (await platform.api.post(base + "/nodes/first/rerun")).status_code == 202
        assert (await platform.api.get(children)).json()["pagination"]["total"] == 2


class TestChildSources:
    async def test_a_run_with_a_parent_is_a_retry(self, platform: Platform) -> None:
        # Contract 8b: every child carries retry, node_rerun or replay; one made through
        # POST …/runs with no triggerSource was "manual".
        wf, source = await failed_run(platform, "sourced")
        child_id = await platform.trigger(wf, parentRunId=source["id"])
        child = (await platform.api.get(runs_url(wf, child_id))).json()
        assert (child["triggerSource"], child["parentRunId"]) == ("retry", source["id"])
        listed = (await platform.api.get(runs_url(wf, source["id"]) + "/children")).json()
        assert [r["triggerSource"] for r in listed["runs"]] == ["retry"]

    async def test_a_child_sources_trigger_needs_its_parent_and_a_parent_needs_retry(
        self, platform: Platform
    ) -> None:
        wf, source = await failed_run(platform, "misnamed")
        url = f"/api/v1/workflows/{wf}/runs"
        before = (await platform.api.get(url)).json()["pagination"]["total"]
        for body, says in (
            ({"parentRunId": source["id"], "triggerSource": "manual"}, "must be 'retry'"),
            ({"parentRunId": source["id"], "triggerSource": "replay"}, "must be 'retry'"),
            ({"triggerSource": "node_rerun"}, "needs parentRunId"),
            ({"triggerSource": "replay"}, "needs parentRunId"),
            ({"triggerSource": "retry"}, "needs parentRunId"),
        ):
            response = await platform.api.post(url, json=body)
            assert response.status_code == 400, response.text
            assert says in response.json()["error"]["message"], response.text
        assert (await platform.api.get(url)).json()["pagination"]["total"] == before
        for fine in ("manual", "api", "schedule"):
            assert (await platform.api.post(url, json={"triggerSource": fine})).status_code == 202


class TestChildren:
    async def test_lists_every_kind_of_child_newest_first(self, platform: Platform) -> None:
        wf, source = await failed_run(platform, "children")
        kinds = []
        for path, code in (("/retry", 200), ("/nodes/first/rerun", 202), ("/replay", 202)):
            response = await platform.api.post(runs_url(wf, source["id"]) + path)
            assert response.status_code == code, response.text
            body = response.json()
            await platform.wait(wf, body.get("runId") or body["run_id"])
            kinds.append(path)
        listed = await platform.api.get(runs_url(wf, source["id"]) + "/children?perPage=2")
        page = listed.json()
        assert page["pagination"]["total"] == 3 and len(page["runs"]) == 2
        assert [r["triggerSource"] for r in page["runs"]] == ["replay", "node_rerun"]
        assert all(r["parentRunId"] == source["id"] for r in page["runs"])


async def test_a_rerun_reuses_a_node_run_past_the_first_page_of_its_source(
    platform: Platform,
) -> None:
    """The source's node runs are read a page at a time (a wide run's can be gigabytes):
    the step to reuse comes after 121 of a loop's node runs, on a later page."""
    inc = transform("inc", v="1")
    steps = [http_step(s, f"{platform.peer_url}/echo/paged-{s}") for s in ("a", "b")]
    wf = await platform.create({"nodes": [loop("count", inc, max_iterations=120), *steps]})
    source = await platform.wait(wf, await platform.trigger(wf), within=30)
    assert source["status"] == "completed" and len(source["nodeRuns"]) == 123
    response = await platform.api.post(runs_url(wf, source["id"]) + "/nodes/b/rerun")
    assert response.status_code == 202, response.text
    child = await platform.wait(wf, response.json()["run_id"], within=30)
    assert child["status"] == "completed", child
    reused = {d["nodeId"]: d["resolution"] for d in child["resolvedDependencies"]}
    assert reused["a"] == "reuse_previous_output", reused
    assert (platform.peer.calls["paged-a"], platform.peer.calls["paged-b"]) == (1, 2)
