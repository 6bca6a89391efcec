"""Trigger, list and read runs through the HTTP API (contract sections 7-12)."""

import asyncio
import json
from typing import Any

from temporalio.client import WorkflowExecutionStatus

from tests.builders import step
from tests.support.platform import Platform
from tests.support.polling import eventually

ECHO = {"nodes": [{"name": "A", "nodeType": "step", "executorKey": "builtin:echo"}]}
SLOW = {
    "nodes": [
        {
            "name": "wait",
            "nodeType": "step",
            "executorKey": "builtin:delay",
            "config": {"seconds": 1},
        },
        {"name": "after", "nodeType": "step", "executorKey": "builtin:echo"},
    ]
}


def runs_url(workflow_id: str) -> str:
    return f"/api/v1/workflows/{workflow_id}/runs"


class TestTrigger:
    async def test_returns_202_pending_with_the_contract_fields(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(runs_url(wf), json={"initialInput": {"a": 1}})
        assert response.status_code == 202
        body = response.json()
        assert set(body) == {
            "runId",
            "workflowDefinitionId",
            "status",
            "triggerSource",
            "startedAt",
            "message",
        }
        assert body["status"] == "pending" and body["triggerSource"] == "manual"
        assert body["workflowDefinitionId"] == wf
        assert body["message"] == "Workflow run queued successfully"

    async def test_run_id_is_the_temporal_workflow_id(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id)
        handle = platform.client.get_workflow_handle(run_id)

        async def closed() -> Any:
            # The read model says completed a moment before the workflow task closes it.
            description = await handle.describe()
            return description if description.status != WorkflowExecutionStatus.RUNNING else None

        description = await eventually(closed)
        assert description.status == WorkflowExecutionStatus.COMPLETED
        attrs = {
            k.name: v for k, v in ((p.key, p.value) for p in description.typed_search_attributes)
        }
        assert attrs["TrellisDefinitionId"] == wf
        assert attrs["TrellisRunStatus"] == "completed"
        assert attrs["TrellisTriggerSource"] == "manual"

    async def test_a_disabled_workflow_cannot_be_triggered(self, platform: Platform) -> None:
        wf = await platform.create(ECHO, enable=False)
        response = await platform.api.post(runs_url(wf), json={})
        assert response.status_code == 400
        assert response.json()["error"]["message"] == (
            "Workflow is disabled. Please enable the workflow before triggering a run."
        )
        listed = await platform.api.get(runs_url(wf))
        assert listed.json()["pagination"]["total"] == 0

    async def test_initial_input_must_be_an_object(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(runs_url(wf), json={"initialInput": [1, 2]})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_request"
        assert "initialInput" in response.json()["error"]["message"]

    async def test_initial_input_must_be_data_a_run_can_carry(self, platform: Platform) -> None:
        # Each was accepted: a lone surrogate was a 500; NaN became null; an input nested
        # 200 deep was stored but unreadable (its run detail and list answered 500, and
        # every reconciler pass failed on it).
        wf = await platform.create(ECHO)
        deep: Any = 1
        for _ in range(200):
            deep = [deep]
        cases = [
            (b'{"initialInput": {"s": "a\\ud800b"}}', "initialInput.s is not valid Unicode"),
            (b'{"initialInput": {"x": NaN}}', "initialInput.x is not a finite number"),
            (
                json.dumps({"initialInput": {"deep": deep}}).encode(),
                "initialInput.deep[0][0]",
            ),
        ]
        for body, fragment in cases:
            response = await platform.api.post(
                runs_url(wf), content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] == "invalid_request"
            assert fragment in response.json()["error"]["message"]
        assert (await platform.api.get(runs_url(wf))).json()["runs"] == []
        # 100 levels run and read back.
        shallow: Any = 1
        for _ in range(99):
            shallow = [shallow]
        run_id = await platform.trigger(wf, {"deep": shallow})
        run = await platform.wait(wf, run_id)
        assert run["status"] == "completed" and run["initialInput"] == {"deep": shallow}

    async def test_an_input_of_more_values_than_a_task_may_decode_is_400_and_starts_nothing(
        self, platform: Platform
    ) -> None:
        # 1,200,000 keys (14.5 MB, within the body limit) were accepted, and every workflow
        # task of the run failed decoding them (past Temporal's 2 s): pending for ever.
        wf = await platform.create(ECHO)
        for initial_input in ({f"k{i}": 0 for i in range(100_000)}, {"a": [[]] * 99_999}):
            response = await platform.api.post(runs_url(wf), json={"initialInput": initial_input})
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert error["code"] == "invalid_request"
            problem = "initialInput holds more than 100000 JSON values"
            assert error["details"] == [{"path": "initialInput", "message": problem}]
        assert (await platform.api.get(runs_url(wf))).json()["runs"] == []
        # 100,000 values (the input itself, its list and 99,998 numbers) run.
        counted = await platform.create(
            {"nodes": [step("T", "builtin:transform", {"map": {"v": "1"}})]}
        )
        run_id = await platform.trigger(counted, {"a": [0] * 99_998})
        run = await platform.wait(counted, run_id, within=60)
        assert run["status"] == "completed", run["errorSummary"]

    async def test_an_unknown_workflow_is_404(self, platform: Platform) -> None:
        response = await platform.api.post(runs_url("nope"), json={})
        assert response.status_code == 404

    async def test_the_same_idempotency_key_returns_the_same_run(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        headers = {"Idempotency-Key": "order-42"}
        first, second = await asyncio.gather(
            platform.api.post(runs_url(wf), json={}, headers=headers),
            platform.api.post(runs_url(wf), json={}, headers=headers),
        )
        assert first.status_code == second.status_code == 202
        assert first.json()["runId"] == second.json()["runId"]
        await platform.wait(wf, first.json()["runId"])
        listed = await platform.api.get(runs_url(wf))
        assert listed.json()["pagination"]["total"] == 1

    async def test_malformed_lineage_fields_are_400_naming_the_field_and_start_nothing(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        reuse = {"nodeId": "n1", "resolution": "reuse_previous_output"}
        for body, path in (
            ({"parentRunId": "!x"}, "parentRunId"),
            (
                {
                    "parentRunId": "run-x",
                    "resolvedDependencies": [{"nodeId": "!n", "resolution": "rerun"}],
                },
                "resolvedDependencies[0].nodeId",
            ),
            (
                {
                    "parentRunId": "run-x",
                    "resolvedDependencies": [
                        {"nodeId": "n0", "resolution": "rerun"},
                        {**reuse, "sourceNodeRunId": "a b"},
                    ],
                },
                "resolvedDependencies[1].sourceNodeRunId",
            ),
            (
                {"parentRunId": "run-x", "resolvedDependencies": [reuse]},
                "resolvedDependencies[0]",
            ),
            (
                {
                    "parentRunId": "run-x",
                    "resolvedDependencies": [
                        {"nodeId": "n1", "resolution": "rerun", "sourceNodeRunId": "run-x.n1.1"}
                    ],
                },
                "resolvedDependencies[0]",
            ),
        ):
            response = await platform.api.post(runs_url(wf), json=body)
            assert response.status_code == 400, body
            error = response.json()["error"]
            assert error["code"] == "invalid_request"
            assert [d["path"] for d in error["details"]] == [path], error
        listed = await platform.api.get(runs_url(wf))
        assert listed.json()["pagination"]["total"] == 0

    async def test_a_well_formed_unknown_parent_run_id_is_404(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(runs_url(wf), json={"parentRunId": "run-unknown"})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "resource_not_found"
        assert (await platform.api.get(runs_url(wf))).json()["pagination"]["total"] == 0

    async def test_an_idempotency_key_reused_with_another_body_is_409_not_the_first_run(
        self, platform: Platform
    ) -> None:
        # Answering the first run would accept a trigger (input b) that never runs.
        wf = await platform.create(ECHO)
        headers = {"Idempotency-Key": "order-43"}
        first = await platform.api.post(
            runs_url(wf), json={"initialInput": {"order": "a"}}, headers=headers
        )
        assert first.status_code == 202, first.text
        reused = await platform.api.post(
            runs_url(wf), json={"initialInput": {"order": "b"}}, headers=headers
        )
        assert reused.status_code == 409, reused.text
        error = reused.json()["error"]
        assert error["code"] == "conflict"
        assert first.json()["runId"] in error["message"] and "initialInput" in error["message"]
        repeat = await platform.api.post(
            runs_url(wf), json={"initialInput": {"order": "a"}}, headers=headers
        )
        assert repeat.status_code == 202 and repeat.json()["runId"] == first.json()["runId"]
        await platform.wait(wf, first.json()["runId"])
        listed = await platform.api.get(runs_url(wf))
        assert listed.json()["pagination"]["total"] == 1

    async def test_under_a_key_numbers_equal_in_value_are_the_same_trigger_and_true_is_not_1(
        self, platform: Platform
    ) -> None:
        # JSON has one number type (a client library may send 1.0 for 1); `true` was taken
        # for `1` (Python's True == 1), answering a trigger that asked for another input.
        wf = await platform.create(ECHO)
        headers = {"Idempotency-Key": "order-44"}
        first = await platform.api.post(
            runs_url(wf), json={"initialInput": {"n": 1}}, headers=headers
        )
        assert first.status_code == 202, first.text
        again = await platform.api.post(
            runs_url(wf), json={"initialInput": {"n": 1.0}}, headers=headers
        )
        assert again.status_code == 202, again.text
        assert again.json()["runId"] == first.json()["runId"]
        other = await platform.api.post(
            runs_url(wf), json={"initialInput": {"n": True}}, headers=headers
        )
        assert other.status_code == 409, other.text
        assert "(initialInput differs)" in other.json()["error"]["message"]
        await platform.wait(wf, first.json()["runId"])

    async def test_optional_fields_sent_as_null_are_left_out(self, platform: Platform) -> None:
        # Clients that write absent fields as null could not trigger: only parentRunId's
        # null was taken; the other three answered 400.
        wf = await platform.create(ECHO)
        nulls = {
            "triggerSource": None,
            "initialInput": None,
            "parentRunId": None,
            "resolvedDependencies": None,
        }
        headers = {"Idempotency-Key": "order-45"}
        for name, value in nulls.items():
            response = await platform.api.post(runs_url(wf), json={name: value})
            assert response.status_code == 202, (name, response.text)
            assert response.json()["triggerSource"] == "manual"
            run = await platform.wait(wf, response.json()["runId"])
            assert run["status"] == "completed" and run["initialInput"] == {}
            assert run["parentRunId"] is None and run["resolvedDependencies"] == []
        # The same trigger as one that leaves them out: one run under a key.
        first = await platform.api.post(runs_url(wf), json=nulls, headers=headers)
        again = await platform.api.post(runs_url(wf), json={}, headers=headers)
        assert first.status_code == again.status_code == 202, (first.text, again.text)
        assert first.json()["runId"] == again.json()["runId"]
        await platform.wait(wf, first.json()["runId"])
        assert (await platform.api.get(runs_url(wf))).json()["pagination"]["total"] == 5

    async def test_optional_fields_of_the_wrong_type_are_400_and_start_nothing(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        for body, path in (
            ({"triggerSource": 5}, "triggerSource"),
            ({"triggerSource": ""}, "triggerSource"),
            ({"initialInput": "x"}, "initialInput"),
            ({"parentRunId": 7}, "parentRunId"),
            ({"resolvedDependencies": {}}, "resolvedDependencies"),
        ):
            response = await platform.api.post(runs_url(wf), json=body)
            assert response.status_code == 400, body
            error = response.json()["error"]
            assert error["code"] == "invalid_request"
            assert [d["path"] for d in error["details"]] == [path], error
        assert (await platform.api.get(runs_url(wf))).json()["pagination"]["total"] == 0

    async def test_resolved_dependencies_need_a_parent_run(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(
            runs_url(wf), json={"resolvedDependencies": [{"nodeId": "n1", "resolution": "rerun"}]}
        )
        assert response.status_code == 400
        assert "requires parentRunId" in response.json()["error"]["message"]

    async def test_reuse_needs_a_source_node_run_id(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        response = await platform.api.post(
            runs_url(wf),
            json={
                "parentRunId": "run-x",
                "resolvedDependencies": [{"nodeId": "n1", "resolution": "reuse_previous_output"}],
            },
        )
        assert response.status_code == 400
        assert "sourceNodeRunId" in response.json()["error"]["message"]

    async def test_a_source_node_run_must_belong_to_the_parent_and_node(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        parent = await platform.trigger(wf)
        parent_run = await platform.wait(wf, parent)
        node_run = parent_run["nodeRuns"][0]
        other = await platform.trigger(wf)
        await platform.wait(wf, other)
        bad_node = await platform.api.post(
            runs_url(wf),
            json={
                "parentRunId": parent,
                "triggerSource": "retry",
                "resolvedDependencies": [
                    {
                        "nodeId": "other-node",
                        "resolution": "reuse_previous_output",
                        "sourceNodeRunId": node_run["id"],
                    }
                ],
            },
        )
        assert bad_node.status_code == 400
        # A node the workflow does not have is refused before its source is looked at.
        assert "'other-node' is not a node of this workflow" in bad_node.json()["error"]["message"]
        wrong_parent = await platform.api.post(
            runs_url(wf),
            json={
                "parentRunId": other,
                "triggerSource": "retry",
                "resolvedDependencies": [
                    {
                        "nodeId": node_run["nodeId"],
                        "resolution": "reuse_previous_output",
                        "sourceNodeRunId": node_run["id"],
                    }
                ],
            },
        )
        assert wrong_parent.status_code == 400
        assert "is not a node run of parent run" in wrong_parent.json()["error"]["message"]
        listed = await platform.api.get(runs_url(wf))
        assert listed.json()["pagination"]["total"] == 2

    async def test_a_source_node_run_of_another_node_is_refused(self, platform: Platform) -> None:
        two = {
            "nodes": [
                {"name": "first", "nodeType": "step", "executorKey": "builtin:echo"},
                {"name": "second", "nodeType": "step", "executorKey": "builtin:echo"},
            ]
        }
        wf = await platform.create(two)
        parent = await platform.trigger(wf)
        node_runs = (await platform.wait(wf, parent))["nodeRuns"]
        by_name = {nr["nodeName"]: nr for nr in node_runs}
        first, second = by_name["first"], by_name["second"]
        response = await platform.api.post(
            runs_url(wf),
            json={
                "parentRunId": parent,
                "triggerSource": "retry",
                "resolvedDependencies": [
                    {
                        "nodeId": second["nodeId"],
                        "resolution": "reuse_previous_output",
                        "sourceNodeRunId": first["id"],
                    }
                ],
            },
        )
        assert response.status_code == 400
        assert response.json()["error"]["message"] == (
            f"sourceNodeRunId {first['id']!r} belongs to node {first['nodeId']!r}, "
            f"not {second['nodeId']!r}"
        )
        listed = await platform.api.get(runs_url(wf))
        assert listed.json()["pagination"]["total"] == 1

    async def test_reused_outputs_are_not_executed_again(self, platform: Platform) -> None:
        wf = await platform.create(
            {
                "nodes": [
                    {
                        "name": "call",
                        "nodeType": "step",
                        "executorKey": "builtin:http",
                        "config": {"url": f"{platform.peer_url}/echo/reuse"},
                    },
                    {
                        "name": "next",
                        "nodeType": "step",
                        "executorKey": "builtin:transform",
                        "config": {"map": {"calls": "previous_step_content.body.calls"}},
                    },
                ]
            }
        )
        parent = await platform.wait(wf, await platform.trigger(wf))
        source = parent["nodeRuns"][0]
        child_id = await platform.trigger(
            wf,
            parentRunId=parent["id"],
            triggerSource="retry",
            resolvedDependencies=[
                {
                    "nodeId": source["nodeId"],
                    "resolution": "reuse_previous_output",
                    "sourceNodeRunId": source["id"],
                }
            ],
        )
        child = await platform.wait(wf, child_id)
        assert child["status"] == "completed" and child["parentRunId"] == parent["id"]
        assert platform.peer.calls["reuse"] == 1
        assert child["nodeRuns"][0]["reusedFromNodeRunId"] == source["id"]
        assert child["finalOutput"] == {"calls": 1}


class TestReading:
    async def test_run_detail_has_every_contract_field(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        run = await platform.wait(wf, await platform.trigger(wf, {"customerId": "c1"}))
        for field in (
            "id",
            "workflowDefinitionId",
            "workflowVersion",
            "status",
            "triggerSource",
            "startedAt",
            "finishedAt",
            "initialInput",
            "finalOutput",
            "errorSummary",
            "definitionSnapshot",
            "parentRunId",
            "resolvedDependencies",
            "nodeRuns",
            "pendingRequirements",
        ):
            assert field in run, field
        assert run["initialInput"] == {"customerId": "c1"}
        assert run["finishedAt"] >= run["startedAt"]
        node = run["nodeRuns"][0]
        for field in (
            "id",
            "nodeId",
            "nodeName",
            "workflowRunId",
            "status",
            "attempt",
            "inputSnapshot",
            "outputSnapshot",
            "error",
            "startedAt",
            "finishedAt",
        ):
            assert field in node, field

    async def test_a_run_is_pinned_to_its_definition_version(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})
        edited = await platform.api.put(
            f"/api/v1/workflows/{wf}",
            json={
                "nodes": [{"name": "replaced", "nodeType": "step", "executorKey": "builtin:echo"}]
            },
        )
        assert edited.status_code == 200 and edited.json()["version"] == 2
        run = await platform.wait(wf, run_id)
        assert run["workflowVersion"] == 1
        assert [n["nodeName"] for n in run["nodeRuns"]] == ["wait", "after"]
        assert run["definitionSnapshot"]["nodes"][0]["name"] == "wait"
        second = await platform.wait(wf, await platform.trigger(wf))
        assert second["workflowVersion"] == 2

    async def test_list_filters_by_status_pages_and_embeds_node_runs(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO)
        ids = [await platform.trigger(wf) for _ in range(3)]
        for run_id in ids:
            await platform.wait(wf, run_id)
        page = (await platform.api.get(runs_url(wf), params={"perPage": 2})).json()
        assert page["pagination"] == {"total": 3, "page": 1, "perPage": 2, "totalPages": 2}
        assert [r["id"] for r in page["runs"]] == ids[::-1][:2]  # newest first
        assert len(page["runs"][0]["nodeRuns"]) == 1
        failed = (await platform.api.get(runs_url(wf), params={"status": "failed"})).json()
        assert failed["runs"] == []
        bad = await platform.api.get(runs_url(wf), params={"status": "weird"})
        assert bad.status_code == 400
        bad_page = await platform.api.get(runs_url(wf), params={"perPage": 101})
        assert bad_page.status_code == 400

    async def test_a_run_of_another_workflow_is_404(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        other = await platform.create(ECHO)
        run_id = await platform.trigger(wf)
        response = await platform.api.get(f"{runs_url(other)}/{run_id}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "resource_not_found"

    async def test_malformed_ids_are_400(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        assert (await platform.api.get(f"{runs_url(wf)}/bad%20id")).status_code == 400
        run_id = await platform.trigger(wf)
        response = await platform.api.get(f"{runs_url(wf)}/{run_id}/nodes/bad%20id")
        assert response.status_code == 400

    async def test_node_runs_list_and_detail(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run = await platform.wait(wf, await platform.trigger(wf))
        listed = (await platform.api.get(f"{runs_url(wf)}/{run['id']}/nodes")).json()
        assert listed["runId"] == run["id"] and listed["workflowId"] == wf
        assert [n["nodeName"] for n in listed["nodeRuns"]] == ["wait", "after"]
        one = listed["nodeRuns"][1]
        detail = await platform.api.get(f"{runs_url(wf)}/{run['id']}/nodes/{one['id']}")
        assert detail.status_code == 200 and detail.json() == one
        missing = await platform.api.get(f"{runs_url(wf)}/{run['id']}/nodes/nr-unknown")
        assert missing.status_code == 404

    async def test_node_runs_are_an_empty_list_before_any_node_ran(
        self, platform: Platform
    ) -> None:
        wf = await platform.create(ECHO, enable=True)
        await platform.worker.shutdown()  # nothing will execute
        run_id = await platform.trigger(wf)
        listed = await platform.api.get(f"{runs_url(wf)}/{run_id}/nodes")
        assert listed.status_code == 200 and listed.json()["nodeRuns"] == []

    async def test_reads_answer_with_the_worker_stopped(self, platform: Platform) -> None:
        wf = await platform.create(ECHO)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id)
        await platform.worker.shutdown()
        for path in ("", f"/{run_id}", f"/{run_id}/nodes", f"/{run_id}/children"):
            response = await platform.api.get(runs_url(wf) + path)
            assert response.status_code == 200, path

    async def test_a_node_run_is_visible_while_it_runs(self, platform: Platform) -> None:
        wf = await platform.create(SLOW)
        run_id = await platform.trigger(wf)
        await platform.wait(wf, run_id, {"running"})

        async def with_a_node_run() -> dict[str, Any] | None:
            run: dict[str, Any] = (await platform.api.get(f"{runs_url(wf)}/{run_id}")).json()
            return run if run["nodeRuns"] else None

        run = await eventually(with_a_node_run, within=2)
        assert run["nodeRuns"][0]["status"] == "running"
        assert run["nodeRuns"][0]["startedAt"] is not None
