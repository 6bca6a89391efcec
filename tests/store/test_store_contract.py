"""The Store contract: every implementation behaves exactly like this (see conftest `store`)."""

from __future__ import annotations

import pytest

from activities.store.base import (
    FIRE_REQUESTS_KEPT,
    ChangedMeanwhile,
    DuplicateNameError,
    ReadTooLarge,
    Store,
)
from activities.store.records import GatedRun, VersionSummary
from temporal_workflows.contracts import Identity
from temporal_workflows.definition import (
    HumanReview,
    LoopConfig,
    RouterChoice,
    WorkflowNode,
    WorkflowSpec,
)
from temporal_workflows.read_model import (
    CANCELLED_UNSTARTED_REV,
    RECORDED_REV,
    START_CLAIM_REV,
    START_FAILED_REV,
)
from temporal_workflows.retry import WORKER_SHUTDOWN_ERROR
from tests.store.builders import at, new_id, node_run, run, workflow
from tests.store.conftest import StoreFactory


class TestWorkflows:
    async def test_created_workflow_reads_back_equal(self, store: Store) -> None:
        record = workflow(description="Sends the welcome mail", created_at=at(0), updated_at=at(0))
        await store.create_workflow(record)
        assert await store.get_workflow(record.id) == record

    async def test_a_definition_nested_past_the_json_parsers_depth_reads_back_equal(
        self, store: Store
    ) -> None:
        # A step's config 230 levels deep: past pydantic's JSON depth (200), so it is read
        # back through the json module, and its datetimes still load (the model is strict).
        config: dict[str, object] = {}
        inner = config
        for _ in range(230):
            inner["x"] = {}
            inner = inner["x"]  # type: ignore[assignment]
        base = workflow()
        nodes = [base.nodes[0].model_copy(update={"config": config})]
        record = base.model_copy(update={"nodes": nodes, "created_at": at(0)})
        await store.create_workflow(record)
        assert await store.get_workflow(record.id) == record

    async def test_unknown_workflow_is_none(self, store: Store) -> None:
        assert await store.get_workflow(new_id()) is None

    async def test_create_keeps_version_one(self, store: Store) -> None:
        record = workflow()
        await store.create_workflow(record)
        version = await store.get_workflow_version(record.id, 1)
        assert version is not None
        assert version.definition == record.spec()

    async def test_list_is_newest_updated_first_with_total(self, store: Store) -> None:
        records = [workflow(updated_at=at(i)) for i in range(3)]
        for record in records:
            await store.create_workflow(record)
        items, total = await store.list_workflows(None, 1, 10)
        assert [r.id for r in items] == [r.id for r in reversed(records)]
        assert total == 3

    async def test_list_pages_keep_the_total(self, store: Store) -> None:
        records = [workflow(updated_at=at(i)) for i in range(5)]
        for record in records:
            await store.create_workflow(record)
        page2, total = await store.list_workflows(None, 2, 2)
        assert [r.id for r in page2] == [records[2].id, records[1].id]
        assert total == 5

    async def test_page_past_the_end_is_empty(self, store: Store) -> None:
        await store.create_workflow(workflow())
        items, total = await store.list_workflows(None, 3, 10)
        assert (items, total) == ([], 1)

    async def test_search_matches_name_case_insensitively(self, store: Store) -> None:
        hit = workflow("Customer Onboarding")
        await store.create_workflow(hit)
        await store.create_workflow(workflow("Invoices"))
        items, total = await store.list_workflows("ONBOARD", 1, 10)
        assert ([r.id for r in items], total) == ([hit.id], 1)

    async def test_search_matches_description_case_insensitively(self, store: Store) -> None:
        hit = workflow("Mailer", description="Sends the Welcome mail")
        await store.create_workflow(hit)
        await store.create_workflow(workflow("Other", description="nothing"))
        items, _ = await store.list_workflows("welcome", 1, 10)
        assert [r.id for r in items] == [hit.id]

    async def test_search_folds_dotted_capital_i_and_accents_on_both_sides(
        self, store: Store
    ) -> None:
        # casefold("İ") is "i" and a combining dot: "istanbul" did not match it.
        hit = workflow("İstanbul deliveries", description="Café orders")
        await store.create_workflow(hit)
        await store.create_workflow(workflow("Ankara"))
        for query in ("istanbul", "İST", "ISTANBUL", "cafe", "CAFÉ"):
            items, total = await store.list_workflows(query, 1, 10)
            assert ([r.id for r in items], total) == ([hit.id], 1), query

    async def test_search_with_a_nul_matches_only_what_holds_it(self, store: Store) -> None:
        # A LIKE pattern ended at the NUL: "\x00zzzzzz" matched every workflow.
        await store.create_workflow(workflow("plain"))
        held = workflow("a\x00b")
        await store.create_workflow(held)
        nothing, total = await store.list_workflows("\x00zzzzzz", 1, 10)
        assert (nothing, total) == ([], 0)
        found, _ = await store.list_workflows("a\x00", 1, 10)
        assert [r.id for r in found] == [held.id]

    async def test_search_treats_wildcards_literally(self, store: Store) -> None:
        hit = workflow("100% done_now")
        await store.create_workflow(hit)
        await store.create_workflow(workflow("100 percent donexnow"))
        by_percent, _ = await store.list_workflows("0% d", 1, 10)
        by_underscore, _ = await store.list_workflows("e_n", 1, 10)
        assert [r.id for r in by_percent] == [hit.id]
        assert [r.id for r in by_underscore] == [hit.id]

    async def test_duplicate_name_on_create_is_refused(self, store: Store) -> None:
        await store.create_workflow(workflow("Same"))
        with pytest.raises(DuplicateNameError):
            await store.create_workflow(workflow("Same"))
        _, total = await store.list_workflows(None, 1, 10)
        assert total == 1

    async def test_names_differing_in_case_are_distinct(self, store: Store) -> None:
        await store.create_workflow(workflow("Same"))
        await store.create_workflow(workflow("same"))
        _, total = await store.list_workflows(None, 1, 10)
        assert total == 2

    async def test_duplicate_name_on_update_is_refused(self, store: Store) -> None:
        await store.create_workflow(workflow("Taken"))
        mine = workflow("Mine")
        await store.create_workflow(mine)
        with pytest.raises(DuplicateNameError):
            await store.update_workflow(mine.model_copy(update={"name": "Taken"}), False)
        assert await store.get_workflow(mine.id) == mine

    async def test_update_with_new_version_keeps_every_version(self, store: Store) -> None:
        record = workflow("v1")
        await store.create_workflow(record)
        changed = record.model_copy(update={"name": "v2", "version": 2, "updated_at": at(9)})
        await store.update_workflow(changed, True)
        assert await store.get_workflow(record.id) == changed
        versions = await store.list_workflow_versions(record.id)
        assert [(v.version, v.name) for v in versions] == [(1, "v1"), (2, "v2")]
        second = await store.get_workflow_version(record.id, 2)
        assert second is not None and second.definition == changed.spec()

    async def test_versions_are_listed_summed_up_as_their_whole_records_say(
        self, store: Store
    ) -> None:
        # The SQLite store counts nodes from the stored text, not the parsed tree: nested
        # ones in every kind of sequence, and none in a step's config.
        def leaf(i: str) -> WorkflowNode:
            return WorkflowNode(id=i, name=i, node_type="step", executor_key="echo",
                                config={"children": [{"node_type": "step"}]})  # fmt: skip

        nested = WorkflowSpec(
            name="Nested \u00e9",
            description="every kind of sequence",
            nodes=[
                leaf("a"),
                WorkflowNode(id="loop", name="Loop", node_type="loop", children=[leaf("b")],
                             loop_config=LoopConfig(max_iterations=2)),
                WorkflowNode(id="if", name="If", node_type="condition", condition_cel="true",
                             true_steps=[leaf("c"), leaf("d")], false_steps=[leaf("e")]),
                WorkflowNode(id="route", name="Route", node_type="router", condition_cel="'x'",
                             choices=[RouterChoice(name="x", steps=[leaf("f")]),
                                      RouterChoice(name="y", steps=[leaf("g"), leaf("h")])]),
            ],
        )  # fmt: skip
        record = workflow("v1")
        await store.create_workflow(record)
        changed = record.model_copy(
            update={**nested.model_dump(), "version": 2, "updated_at": at(9)}
        )
        await store.update_workflow(changed, True)
        summaries = await store.list_workflow_versions(record.id)
        wholes = [await store.get_workflow_version(record.id, v) for v in (1, 2)]
        assert summaries == [VersionSummary.of(w) for w in wholes if w is not None]
        assert [(s.num_nodes, s.created_at) for s in summaries] == [
            (1, record.updated_at),
            (11, at(9)),
        ]
        assert summaries[1].name == nested.name and summaries[1].description == nested.description

    async def test_update_without_new_version_keeps_versions(self, store: Store) -> None:
        record = workflow()
        await store.create_workflow(record)
        toggled = record.model_copy(update={"enabled": True})
        await store.update_workflow(toggled, False)
        assert await store.get_workflow(record.id) == toggled
        assert [v.version for v in await store.list_workflow_versions(record.id)] == [1]

    async def test_an_update_over_what_was_read_is_refused_once_it_changed(
        self, store: Store
    ) -> None:
        record = workflow("v1")
        await store.create_workflow(record)
        first = record.model_copy(update={"name": "v2", "version": 2, "updated_at": at(9)})
        await store.update_workflow(first, True, read=record)
        # A second save of the same read: its version number is taken, its content lost.
        second = record.model_copy(update={"name": "v2b", "version": 2, "updated_at": at(10)})
        with pytest.raises(ChangedMeanwhile):
            await store.update_workflow(second, True, read=record)
        assert await store.get_workflow(record.id) == first
        versions = await store.list_workflow_versions(record.id)
        assert [(v.version, v.name) for v in versions] == [(1, "v1"), (2, "v2")]
        # A toggle read before the save is refused too; read after, it lands.
        toggled = first.model_copy(update={"enabled": True, "updated_at": at(11)})
        with pytest.raises(ChangedMeanwhile):
            await store.update_workflow(toggled, False, read=record)
        await store.update_workflow(toggled, False, read=first)
        assert await store.get_workflow(record.id) == toggled

    async def test_an_update_over_what_was_read_compares_enabled_too(self, store: Store) -> None:
        record = workflow()
        await store.create_workflow(record)
        # Same version and time, enabled differs: a change the read did not see.
        stale = record.model_copy(update={"enabled": True})
        with pytest.raises(ChangedMeanwhile):
            await store.update_workflow(stale.model_copy(update={"name": "x"}), False, read=stale)
        assert await store.get_workflow(record.id) == record

    async def test_an_update_over_a_deleted_workflow_is_refused(self, store: Store) -> None:
        record = workflow()
        await store.create_workflow(record)
        await store.delete_workflow(record.id)
        with pytest.raises(ChangedMeanwhile):
            await store.update_workflow(record, False, read=record)
        assert await store.get_workflow(record.id) is None

    async def test_unknown_version_is_none(self, store: Store) -> None:
        record = workflow()
        await store.create_workflow(record)
        assert await store.get_workflow_version(record.id, 2) is None

    async def test_delete_removes_workflow_and_versions(self, store: Store) -> None:
        record = workflow()
        await store.create_workflow(record)
        assert await store.delete_workflow(record.id) is True
        assert await store.get_workflow(record.id) is None
        assert await store.list_workflow_versions(record.id) == []

    async def test_delete_cascades_to_runs_node_runs_and_events(self, store: Store) -> None:
        record, other = workflow(), workflow()
        await store.create_workflow(record)
        await store.create_workflow(other)
        doomed, kept = run(record.id), run(other.id)
        for r in (doomed, kept):
            await store.insert_run(r)
            await store.upsert_node_run(node_run(r.id))
            await store.append_event(r.id, {"type": "run_started"})
        await store.delete_workflow(record.id)
        assert await store.get_run(doomed.id) is None
        assert await store.list_node_runs([doomed.id]) == []
        assert await store.list_events(doomed.id, 0, 10) == []
        assert await store.get_run(kept.id) is not None
        assert len(await store.list_node_runs([kept.id])) == 1
        assert len(await store.list_events(kept.id, 0, 10)) == 1

    async def test_delete_unknown_workflow_is_false(self, store: Store) -> None:
        assert await store.delete_workflow(new_id()) is False


class TestRuns:
    async def test_inserted_run_reads_back_equal(self, store: Store) -> None:
        record = run(new_id(), initial_input={"email": "a@b.c"}, finished_at=at(5))
        assert await store.insert_run(record) == record
        assert await store.get_run(record.id) == record

    async def test_unknown_run_is_none(self, store: Store) -> None:
        assert await store.get_run(new_id()) is None

    async def test_second_insert_returns_the_first_unchanged(self, store: Store) -> None:
        first = run(new_id(), status="running")
        await store.insert_run(first)
        again = first.model_copy(update={"status": "failed"})
        assert await store.insert_run(again) == first
        assert await store.get_run(first.id) == first

    async def test_an_insert_returns_the_callers_record_only_when_it_inserted_it(
        self, store: Store
    ) -> None:
        # A starter tells the record it wrote from one a first use of its key stored.
        first = run(new_id())
        assert await store.insert_run(first) is first
        again = first.model_copy()
        stored = await store.insert_run(again)
        assert stored is not again and stored == first

    async def test_an_unstarted_run_is_deleted_with_what_it_holds(self, store: Store) -> None:
        wf = workflow()
        await store.create_workflow(wf)
        recorded, claimed = run(wf.id, rev=RECORDED_REV), run(wf.id, rev=START_CLAIM_REV)
        for record in (recorded, claimed):
            await store.insert_run(record)
            await store.append_event(record.id, {"type": "run_created"})
            await store.upsert_node_run(node_run(record.id))
            assert await store.delete_unstarted_run(record.id) is True
            assert await store.get_run(record.id) is None
            assert await store.list_events(record.id, 0, 10) == []
            assert await store.list_node_runs([record.id]) == []
        assert (await store.list_runs(wf.id))[1] == 0
        assert await store.delete_unstarted_run(recorded.id) is False

    async def test_a_run_its_workflow_or_a_cancel_wrote_is_never_deleted_as_unstarted(
        self, store: Store
    ) -> None:
        wf = workflow()
        await store.create_workflow(wf)
        kept = [
            run(wf.id, status="pending", rev=START_CLAIM_REV + 1),  # its workflow wrote
            run(wf.id, status="running", rev=START_CLAIM_REV),
            run(wf.id, status="cancelled", rev=CANCELLED_UNSTARTED_REV),
            run(wf.id, status="failed", rev=START_FAILED_REV),  # refused: a repeat restarts it
        ]
        for record in kept:
            await store.insert_run(record)
            await store.append_event(record.id, {"type": "run_started"})
            assert await store.delete_unstarted_run(record.id) is False
            assert await store.get_run(record.id) == record
            assert len(await store.list_events(record.id, 0, 10)) == 1
        assert await store.delete_unstarted_run(new_id()) is False

    async def test_update_applies_changes_and_stores_rev(self, store: Store) -> None:
        record = run(new_id())
        await store.insert_run(record)
        applied = await store.update_run(
            record.id,
            3,
            {"status": "completed", "final_output": {"ok": True}, "finished_at": at(7)},
        )
        stored = await store.get_run(record.id)
        assert applied is True
        assert stored is not None
        assert (stored.status, stored.final_output, stored.finished_at, stored.rev) == (
            "completed",
            {"ok": True},
            at(7),
            3,
        )

    async def test_update_with_stale_rev_is_not_applied(self, store: Store) -> None:
        record = run(new_id())
        await store.insert_run(record)
        await store.update_run(record.id, 5, {"status": "completed"})
        assert await store.update_run(record.id, 4, {"status": "running"}) is False
        stored = await store.get_run(record.id)
        assert stored is not None and (stored.status, stored.rev) == ("completed", 5)

    async def test_update_with_equal_rev_is_applied(self, store: Store) -> None:
        record = run(new_id(), rev=2)
        await store.insert_run(record)
        assert await store.update_run(record.id, 2, {"status": "running"}) is True

    async def test_newer_only_applies_a_rev_once_and_logs_its_event_once(
        self, store: Store
    ) -> None:
        # A write that may land twice (a step's hand-off, then the outbox again).
        record = run(new_id(), rev=1)
        await store.insert_run(record)
        event = {"type": "run_started", "runId": record.id}
        assert await store.update_run(record.id, 2, {"status": "running"}, event, newer_only=True)
        assert not await store.update_run(
            record.id, 2, {"status": "running"}, event, newer_only=True
        )
        assert [e["type"] for e in await store.list_events(record.id, 0, 10)] == ["run_started"]
        stored = await store.get_run(record.id)
        assert stored is not None and stored.rev == 2

    async def test_an_end_that_differs_applies_over_a_newer_rev_and_a_repeat_does_not(
        self, store: Store
    ) -> None:
        # A workflow task wrote `completed` (rev 5), then Temporal refused it (a cancel had
        # come); run again, it ends `cancelled` at a lower rev: that end is Temporal's.
        record = run(new_id(), rev=1)
        await store.insert_run(record)
        done = {"status": "completed", "end_order": 7}
        assert await store.update_run(record.id, 5, done, newer_only=True, ending=True)
        cancelled = {"status": "cancelled", "error_summary": "cancelled", "end_order": 11}
        assert await store.update_run(record.id, 3, cancelled, newer_only=True, ending=True)
        # The first end landing again later (a local activity retried) does not come back.
        assert not await store.update_run(record.id, 5, done, newer_only=True, ending=True)
        # The same end again (a task repeated) is refused, so it is not counted twice; so
        # is any other write over the newer rev, and an end that is not marked so.
        assert not await store.update_run(record.id, 3, cancelled, newer_only=True, ending=True)
        assert not await store.update_run(record.id, 2, {"status": "running"}, newer_only=True)
        assert not await store.update_run(record.id, 2, {"status": "completed"}, newer_only=True)
        stored = await store.get_run(record.id)
        assert stored is not None and (stored.status, stored.rev) == ("cancelled", 3)
        assert stored.end_order == 11
        assert stored.error_summary == "cancelled"
        # Never over what the API or the reconciler wrote (a cancel before the start).
        assert await store.update_run(record.id, CANCELLED_UNSTARTED_REV, {"status": "failed"})
        later = {"status": "completed", "end_order": 20}
        assert not await store.update_run(record.id, 4, later, newer_only=True, ending=True)

    async def test_a_node_run_merged_again_logs_its_keyed_events_once(self, store: Store) -> None:
        # Node runs repeat revs legitimately, so the merge applies again; the keys hold.
        run_id = await _stored_run(store)
        fields = {**node_run(run_id, rev=5).to_document(), "status": "running"}
        events = [{"type": "node_started"}, {"type": "node_completed"}]
        for _ in range(2):
            assert await store.merge_node_run(fields, events, ["e:1:a", "e:1.1:b"])
        assert [e["type"] for e in await store.list_events(run_id, 0, 10)] == [
            "node_started",
            "node_completed",
        ]
        assert await store.merge_node_run(fields, events)  # unkeyed: logged again
        assert len(await store.list_events(run_id, 0, 10)) == 4

    async def test_a_merged_node_run_keeps_the_first_start_written(self, store: Store) -> None:
        # A retried step's attempts and a gated step's run each write a start.
        run_id = await _stored_run(store)
        record = node_run(run_id, started_at=None, rev=1)
        assert await store.upsert_node_run(record)
        first = {"id": record.id, "rev": 2, "started_at": at(1), "status": "running"}
        assert await store.merge_node_run(first)
        again = {"id": record.id, "rev": 3, "started_at": at(5), "status": "completed"}
        assert await store.merge_node_run(again)
        merged = await store.get_node_run(record.id)
        assert merged is not None
        assert (merged.started_at, merged.status) == (at(1), "completed")

    async def test_a_cancel_over_a_failed_attempt_keeps_its_error(self, store: Store) -> None:
        # A step cancelled while Temporal waited to retry it said only `cancelled`.
        run_id = await _stored_run(store)
        record = node_run(run_id, started_at=at(0), rev=1)
        assert await store.upsert_node_run(record)
        failed = {"id": record.id, "rev": 12, "attempt": 1, "status": "running", "error": "503"}
        assert await store.merge_node_run(failed)
        cancel = {"id": record.id, "rev": 10**9, "status": "cancelled", "error": "cancelled"}
        assert await store.merge_node_run(cancel)
        merged = await store.get_node_run(record.id)
        assert merged is not None and merged.status == "cancelled"
        assert merged.error == "cancelled (its last attempt failed: 503)"
        # Written again (a task repeated), it says so once.
        assert await store.merge_node_run(cancel)
        again = await store.get_node_run(record.id)
        assert again is not None and again.error == merged.error

    async def test_a_cancel_over_an_attempt_a_deploy_cut_off_says_only_cancelled(
        self, store: Store
    ) -> None:
        # A worker's shutdown is no failure of the step (found by a review).
        run_id = await _stored_run(store)
        record = node_run(run_id, started_at=at(0), rev=1)
        assert await store.upsert_node_run(record)
        cut = {"id": record.id, "rev": 12, "attempt": 1, "status": "running"}
        assert await store.merge_node_run({**cut, "error": WORKER_SHUTDOWN_ERROR})
        cancel = {"id": record.id, "rev": 10**9, "status": "cancelled", "error": "cancelled"}
        assert await store.merge_node_run(cancel)
        merged = await store.get_node_run(record.id)
        assert merged is not None and merged.error == "cancelled"

    async def test_a_cancel_of_a_later_attempt_says_only_cancelled(self, store: Store) -> None:
        # Attempt 2 was cancelled before its start landed: its end is its own, not the
        # failed attempt 1's.
        run_id = await _stored_run(store)
        record = node_run(run_id, started_at=at(0), rev=1)
        assert await store.upsert_node_run(record)
        failed = {"id": record.id, "rev": 12, "attempt": 1, "status": "running", "error": "503"}
        assert await store.merge_node_run(failed)
        ended = {"id": record.id, "rev": 29, "attempt": 2, "status": "cancelled"}
        assert await store.merge_node_run({**ended, "error": "cancelled"})
        merged = await store.get_node_run(record.id)
        assert merged is not None and (merged.error, merged.attempt) == ("cancelled", 2)

    async def test_a_node_run_of_a_run_not_stored_is_not_merged(self, store: Store) -> None:
        # Its run was deleted with its workflow; its steps' last writes landed after the
        # delete (the worker down), leaving node runs and events no run owned.
        run_id = new_id()
        fields = {**node_run(run_id, rev=1).to_document(), "status": "cancelled"}
        assert not await store.merge_node_run(fields, [{"type": "node_cancelled"}])
        assert await store.get_node_run(fields["id"]) is None
        assert await store.list_events(run_id, 0, 10) == []

    async def test_update_of_unknown_run_is_false(self, store: Store) -> None:
        assert await store.update_run(new_id(), 1, {"status": "running"}) is False

    async def test_update_with_unknown_field_is_refused(self, store: Store) -> None:
        record = run(new_id())
        await store.insert_run(record)
        with pytest.raises(ValueError, match="colour"):
            await store.update_run(record.id, 1, {"colour": "red"})
        assert await store.get_run(record.id) == record

    async def test_list_is_newest_first_with_total(self, store: Store) -> None:
        wf = new_id()
        records = [run(wf, started_at=at(i)) for i in range(3)]
        for r in records:
            await store.insert_run(r)
        await store.insert_run(run(new_id()))
        items, total = await store.list_runs(wf)
        assert ([r.id for r in items], total) == ([r.id for r in reversed(records)], 3)

    async def test_listed_runs_are_their_records_without_the_definition(self, store: Store) -> None:
        record = run(new_id(), status="completed", final_output={"ok": True})
        await store.insert_run(record)
        items, _ = await store.list_runs(record.workflow_definition_id)
        assert not hasattr(items[0], "definition_snapshot")
        assert items[0].model_dump() == record.model_dump(exclude={"definition_snapshot"})

    async def test_list_without_workflow_lists_every_run(self, store: Store) -> None:
        for i in range(3):
            await store.insert_run(run(new_id(), started_at=at(i)))
        _, total = await store.list_runs(None)
        assert total == 3

    async def test_list_pages(self, store: Store) -> None:
        wf = new_id()
        records = [run(wf, started_at=at(i)) for i in range(5)]
        for r in records:
            await store.insert_run(r)
        items, total = await store.list_runs(wf, page=2, per_page=2)
        assert ([r.id for r in items], total) == ([records[2].id, records[1].id], 5)

    async def test_list_filters_by_status(self, store: Store) -> None:
        wf = new_id()
        failed = run(wf, status="failed", started_at=at(1))
        await store.insert_run(failed)
        await store.insert_run(run(wf, status="completed", started_at=at(2)))
        items, total = await store.list_runs(wf, status="failed")
        assert ([r.id for r in items], total) == ([failed.id], 1)

    async def test_list_filters_by_parent_run(self, store: Store) -> None:
        wf = new_id()
        parent = run(wf, started_at=at(0))
        children = [run(wf, parent_run_id=parent.id, started_at=at(i)) for i in (1, 2)]
        for r in (parent, *children):
            await store.insert_run(r)
        items, total = await store.list_runs(None, parent_run_id=parent.id)
        assert ([r.id for r in items], total) == ([children[1].id, children[0].id], 2)

    async def test_list_filters_by_schedule(self, store: Store) -> None:
        wf = new_id()
        scheduled = [run(wf, schedule_id="sched-a", started_at=at(i)) for i in (1, 2)]
        others = [run(wf, schedule_id="sched-b", started_at=at(3)), run(wf, started_at=at(4))]
        for r in (*scheduled, *others):
            await store.insert_run(r)
        items, total = await store.list_runs(wf, schedule_id="sched-a")
        assert ([r.id for r in items], total) == ([scheduled[1].id, scheduled[0].id], 2)
        assert items[0].schedule_id == "sched-a"
        assert await store.list_runs(wf, schedule_id="sched-c") == ([], 0)

    async def test_unstarted_runs_are_pending_and_recorded_before(self, store: Store) -> None:
        wf = new_id()
        first = run(wf, status="pending", started_at=at(1))
        second = run(wf, status="pending", started_at=at(2))
        for r in (
            second,
            first,
            run(wf, status="running", started_at=at(1)),
            run(wf, status="paused", started_at=at(1)),
            run(wf, status="completed", started_at=at(1)),
            run(wf, status="pending", started_at=at(10)),
        ):
            await store.insert_run(r)
        unstarted = await store.list_unstarted_runs(at(5))
        assert [r.id for r in unstarted] == [first.id, second.id]

    async def test_gated_runs_are_oldest_first_and_limited(self, store: Store) -> None:
        wf = new_id()
        gate = [{"stepId": "step-1", "kind": "confirmation"}]
        waiting = [
            run(wf, status="awaiting_approval", started_at=at(i), pending_requirements=gate)
            for i in (3, 1, 2)
        ]
        for r in waiting:
            await store.insert_run(r)
        await store.insert_run(run(wf, status="running", started_at=at(0)))
        # A run in the status with no open gate (paused between steps) is not one.
        await store.insert_run(run(wf, status="awaiting_approval", started_at=at(0)))
        items = await store.list_gated_runs("awaiting_approval", 2)
        assert [r.id for r in items] == [waiting[1].id, waiting[2].id]
        assert items[0] == GatedRun.of(waiting[1])
        assert items[0].pending_requirements == gate and items[0].approvers == {}
        assert await store.list_gated_runs("awaiting_approval", 0) == []

    async def test_gated_runs_of_two_versions_have_each_versions_approvers(
        self, store: Store
    ) -> None:
        wf = new_id()
        gate = [{"stepId": "step-1", "kind": "confirmation"}]
        runs = []
        for version, approvers in ((1, ["user:bob"]), (2, ["role:ops"]), (1, ["user:bob"])):
            step = WorkflowNode(
                id="step-1", name="Send", node_type="step", executor_key="echo",
                human_review=HumanReview(requires_confirmation=True, approvers=approvers),
            )  # fmt: skip
            record = run(
                wf, status="awaiting_approval", started_at=at(len(runs)), workflow_version=version,
                definition_snapshot=WorkflowSpec(name="Send", nodes=[step]),
                pending_requirements=gate,
            )  # fmt: skip
            await store.insert_run(record)
            runs.append(record)
        for _ in range(2):  # read again: what was read the first time is the same
            got = await store.list_gated_runs("awaiting_approval", 10)
            assert [r.approvers_of("step-1") for r in got] == [
                ["user:bob"],
                ["role:ops"],
                ["user:bob"],
            ]
            assert got == [GatedRun.of(r) for r in runs]

    async def test_gated_runs_name_each_steps_approvers(self, store: Store) -> None:
        # Approvers of steps at the top, nested in a loop and in a router's choice, read
        # without the snapshot; a `human_review` inside a step's config is no gate's.
        review = {"requires_confirmation": True}
        nested = WorkflowNode(
            id="inner", name="Inner", node_type="step", executor_key="echo",
            human_review=HumanReview(**review, approvers=["role:ops"]),
            config={"human_review": {"approvers": ["user:mallory"]}, "id": "chosen"},
        )  # fmt: skip
        chosen = WorkflowNode(
            id="chosen", name="Chosen", node_type="step", executor_key="echo",
            human_review=HumanReview(**review, approvers=["user:carol", "user:dave"]),
        )  # fmt: skip
        snapshot = WorkflowSpec(
            name="Reviewed \u00e9 \"quoted\"",
            nodes=[
                WorkflowNode(
                    id="top", name="Top", node_type="step", executor_key="echo",
                    human_review=HumanReview(**review, approvers=["user:bob"]),
                ),
                WorkflowNode(id="open", name="Open", node_type="step", executor_key="echo",
                             human_review=HumanReview(**review)),
                WorkflowNode(id="loop", name="Loop", node_type="loop", children=[nested],
                             loop_config=LoopConfig(max_iterations=2)),
                WorkflowNode(id="route", name="Route", node_type="router",
                             choices=[RouterChoice(name="a", steps=[chosen])]),
            ],
        )  # fmt: skip
        gates = [{"stepId": i, "kind": "confirmation"} for i in ("top", "inner", "chosen")]
        record = run(
            new_id(), status="paused", definition_snapshot=snapshot, pending_requirements=gates
        )
        await store.insert_run(record)
        [got] = await store.list_gated_runs("paused", 10)
        assert got == GatedRun.of(record)
        assert got.workflow_name == snapshot.name
        assert got.approvers == {
            "top": ["user:bob"], "inner": ["role:ops"], "chosen": ["user:carol", "user:dave"],
        }  # fmt: skip
        assert got.approvers_of("open") == []


class TestNodeRuns:
    async def test_upserted_node_run_reads_back_equal(self, store: Store) -> None:
        record = node_run(new_id(), started_at=at(1), output_snapshot={"x": [1, 2]})
        assert await store.upsert_node_run(record) is True
        assert await store.get_node_run(record.id) == record

    async def test_unknown_node_run_is_none(self, store: Store) -> None:
        assert await store.get_node_run(new_id()) is None

    async def test_newer_rev_replaces(self, store: Store) -> None:
        record = node_run(new_id(), rev=1)
        await store.upsert_node_run(record)
        newer = record.model_copy(update={"status": "completed", "rev": 2})
        assert await store.upsert_node_run(newer) is True
        assert await store.get_node_run(record.id) == newer

    async def test_stale_rev_is_not_applied(self, store: Store) -> None:
        record = node_run(new_id(), status="completed", rev=3)
        await store.upsert_node_run(record)
        stale = record.model_copy(update={"status": "running", "rev": 2})
        assert await store.upsert_node_run(stale) is False
        assert await store.get_node_run(record.id) == record

    async def test_list_orders_by_start_unstarted_last_across_runs(self, store: Store) -> None:
        run_a, run_b = new_id(), new_id()
        second = node_run(run_b, started_at=at(2))
        first = node_run(run_a, started_at=at(1))
        unstarted = node_run(run_a, id="zz-unstarted")
        for r in (unstarted, second, first, node_run(new_id(), started_at=at(0))):
            await store.upsert_node_run(r)
        listed = await store.list_node_runs([run_a, run_b])
        assert [r.id for r in listed] == [first.id, second.id, unstarted.id]

    async def test_list_of_no_runs_is_empty(self, store: Store) -> None:
        assert await store.list_node_runs([]) == []

    async def test_a_page_is_a_slice_of_the_full_order_with_the_total(self, store: Store) -> None:
        run_id = new_id()
        records = [node_run(run_id, id=f"{run_id}.n.{i}", started_at=at(i)) for i in range(5)]
        records.append(node_run(run_id, id=f"{run_id}.unstarted"))
        for record in reversed(records):
            await store.upsert_node_run(record)
        await store.upsert_node_run(node_run(new_id(), started_at=at(0)))  # another run's

        full = [r.id for r in await store.list_node_runs([run_id])]
        page, total = await store.node_run_page(run_id, offset=2, limit=3)
        assert [r.id for r in page] == full[2:5]
        assert total == 6
        beyond, total = await store.node_run_page(run_id, offset=10, limit=3)
        assert (beyond, total) == ([], 6)

    async def test_a_read_past_its_bytes_is_refused_before_the_rest_is_read(
        self, store: Store
    ) -> None:
        run_id = new_id()
        records = [
            node_run(run_id, id=f"{run_id}.{i}", started_at=at(i), output_snapshot="x" * 10_000)
            for i in range(10)
        ]
        for record in records:
            await store.upsert_node_run(record)
        assert await store.list_node_runs([run_id], max_bytes=1_000_000) == records
        with pytest.raises(ReadTooLarge) as refused:
            await store.list_node_runs([run_id], max_bytes=35_000)
        # Stopped at the document that passed the limit: the fourth of ten.
        assert (refused.value.limit, refused.value.documents) == (35_000, 4)
        page, total = await store.node_run_page(run_id, offset=2, limit=3, max_bytes=35_000)
        assert (page, total) == (records[2:5], 10)
        with pytest.raises(ReadTooLarge):
            await store.node_run_page(run_id, offset=0, limit=5, max_bytes=35_000)
        assert len(await store.list_node_runs([run_id])) == 10  # no limit given: all

    async def test_counts_by_status_of_one_run(self, store: Store) -> None:
        run_id = new_id()
        for i, status in enumerate(["completed", "completed", "failed", "running"]):
            await store.upsert_node_run(node_run(run_id, id=f"{run_id}.{i}", status=status))
        await store.upsert_node_run(node_run(new_id(), status="failed"))
        other, none = new_id(), new_id()
        await store.upsert_node_run(node_run(other, status="completed"))
        assert await store.node_run_counts_of([run_id, other, none]) == {
            run_id: {"completed": 2, "failed": 1, "running": 1},
            other: {"completed": 1},
            none: {},
        }
        assert await store.node_run_counts_of([]) == {}


class TestEvents:
    async def test_ids_are_monotonic_across_runs(self, store: Store) -> None:
        run_a, run_b = new_id(), new_id()
        ids = [await store.append_event(r, {"type": "tick"}) for r in (run_a, run_b, run_a)]
        assert ids == sorted(ids) and len(set(ids)) == 3

    async def test_list_returns_a_runs_events_in_order_with_ids(self, store: Store) -> None:
        run_id = new_id()
        first = await store.append_event(run_id, {"type": "a", "data": {"n": 1}})
        await store.append_event(new_id(), {"type": "elsewhere"})
        second = await store.append_event(run_id, {"type": "b"})
        assert await store.list_events(run_id, 0, 10) == [
            {"type": "a", "data": {"n": 1}, "id": first},
            {"type": "b", "id": second},
        ]

    async def test_after_id_skips_seen_events_and_limit_caps(self, store: Store) -> None:
        run_id = new_id()
        ids = [await store.append_event(run_id, {"n": n}) for n in range(4)]
        listed = await store.list_events(run_id, ids[0], 2)
        assert [e["id"] for e in listed] == ids[1:3]

    async def test_the_last_event_id_is_the_runs_newest_and_0_without_one(
        self, store: Store
    ) -> None:
        run_id, other = new_id(), new_id()
        assert await store.last_event_id(run_id) == 0
        await store.append_event(run_id, {"type": "a"})
        newest = await store.append_event(run_id, {"type": "b"})
        await store.append_event(other, {"type": "elsewhere"})
        assert await store.last_event_id(run_id) == newest

    async def test_a_keyed_event_appended_twice_is_logged_once(self, store: Store) -> None:
        # A workflow's batch written again (its task ran twice) repeats its keyed events.
        run_id = new_id()
        first = await store.append_event(run_id, {"type": "node_started"}, key="exec:3:a1")
        again = await store.append_event(run_id, {"type": "node_started"}, key="exec:3:a1")
        assert again == first
        assert await store.list_events(run_id, 0, 10) == [{"type": "node_started", "id": first}]

    async def test_an_unkeyed_event_appended_twice_is_logged_twice(self, store: Store) -> None:
        run_id = new_id()
        ids = [await store.append_event(run_id, {"type": "run_failed"}) for _ in range(2)]
        assert [e["id"] for e in await store.list_events(run_id, 0, 10)] == ids
        assert ids[0] < ids[1]

    async def test_a_key_is_one_event_per_run_not_per_store(self, store: Store) -> None:
        run_a, run_b = new_id(), new_id()
        await store.append_event(run_a, {"type": "tick"}, key="k")
        await store.append_event(run_b, {"type": "tick"}, key="k")
        await store.append_event(run_a, {"type": "tick"}, key="k2")
        assert len(await store.list_events(run_a, 0, 10)) == 2
        assert len(await store.list_events(run_b, 0, 10)) == 1

    async def test_ids_stay_monotonic_past_a_skipped_repeat(self, store: Store) -> None:
        run_id = new_id()
        first = await store.append_event(run_id, {"type": "a"}, key="k1")
        await store.append_event(run_id, {"type": "a"}, key="k1")
        second = await store.append_event(run_id, {"type": "b"}, key="k2")
        listed = await store.list_events(run_id, first, 10)
        assert [e["id"] for e in listed] == [second] and second > first

    async def test_deleting_a_log_deletes_its_events_only_and_keeps_ids_growing(
        self, store: Store
    ) -> None:
        # A deleted schedule's skips: a schedule made anew under its id starts with none.
        log, other = f"schedule:{new_id()}", new_id()
        newest = [await store.append_event(r, {"type": "skip"}, key="k") for r in (other, log)]
        await store.delete_events(log)
        assert await store.list_events(log, 0, 10) == []
        assert len(await store.list_events(other, 0, 10)) == 1
        again = await store.append_event(log, {"type": "skip"}, key="k")
        assert again > max(newest)

    async def test_datetimes_in_events_are_stored_as_text(self, store: Store) -> None:
        run_id = new_id()
        await store.append_event(run_id, {"at": at(0)})
        (event,) = await store.list_events(run_id, 0, 1)
        assert event["at"].startswith("2026-03-01T12:00:00.123456")


class TestScheduleFires:
    """Who asked to fire a schedule now, claimed by the firing that follows."""

    async def test_a_firing_claims_the_newest_request_in_its_window_once(
        self, store: Store
    ) -> None:
        sid, bob, carol = new_id(), Identity(user_id="bob"), Identity(user_id="carol", scopes=["x"])
        await store.record_schedule_fire(sid, bob, at(0))
        await store.record_schedule_fire(sid, carol, at(5))
        await store.record_schedule_fire(new_id(), bob, at(6))  # another schedule's
        # Outside the window: none (a request made after the firing's second, or too early).
        assert await store.claim_schedule_fire(sid, "f-early", at(-10), at(0)) is None
        assert await store.claim_schedule_fire(sid, "f", at(0), at(6)) == carol
        # A retry of the same firing answers the same; another firing gets the one left.
        assert await store.claim_schedule_fire(sid, "f", at(0), at(6)) == carol
        assert await store.claim_schedule_fire(sid, "g", at(0), at(6)) == bob
        assert await store.claim_schedule_fire(sid, "h", at(0), at(6)) is None

    async def test_deleted_and_old_requests_are_claimed_by_no_one(self, store: Store) -> None:
        sid, other, bob = new_id(), new_id(), Identity(user_id="bob")
        await store.record_schedule_fire(sid, bob, at(0))
        await store.record_schedule_fire(other, bob, at(0))
        await store.delete_schedule_fires(sid)
        assert await store.claim_schedule_fire(sid, "f", at(-1), at(1)) is None
        # The schedule's next request drops those kept past FIRE_REQUESTS_KEPT.
        later = FIRE_REQUESTS_KEPT.total_seconds() + 1
        await store.record_schedule_fire(other, bob, at(later))
        assert await store.claim_schedule_fire(other, "f", at(-1), at(1)) is None
        assert await store.claim_schedule_fire(other, "g", at(-1), at(later + 1)) == bob


class TestPayloads:
    async def test_a_payload_reads_back_byte_for_byte(self, store: Store) -> None:
        data = bytes(range(256)) * 4
        await store.put_payload("k1", data)
        assert await store.get_payload("k1") == data

    async def test_an_unknown_key_is_none(self, store: Store) -> None:
        assert await store.get_payload(new_id()) is None

    async def test_putting_the_same_key_twice_keeps_one_payload(self, store: Store) -> None:
        await store.put_payload("k2", b"same")
        await store.put_payload("k2", b"same")
        assert await store.get_payload("k2") == b"same"

    async def test_a_payload_larger_than_a_document_reads_back_whole(self, store: Store) -> None:
        # Over MongoDB's 16 MB document limit: kept in chunks there.
        data = b"abcdefgh" * (2_500_000)
        await store.put_payload("big", data)
        assert await store.get_payload("big") == data


class TestIntegersBeyondSixtyFourBits:
    """JSON has integers of any size; every store keeps them (BSON's stop at 64 bits)."""

    BIG = 2**70

    async def test_a_definition_holding_one_reads_back_and_saves_again(self, store: Store) -> None:
        base = workflow()
        nodes = [base.nodes[0].model_copy(update={"config": {"id": self.BIG}})]
        record = base.model_copy(update={"nodes": nodes})
        await store.create_workflow(record)
        assert await store.get_workflow(record.id) == record
        items, _ = await store.list_workflows(None, 1, 10)
        assert items == [record]

        plain = record.model_copy(update={"nodes": base.nodes, "version": 2})
        await store.update_workflow(plain, True)
        assert await store.get_workflow(record.id) == plain
        first = await store.get_workflow_version(record.id, 1)
        assert first is not None and first.definition.nodes[0].config == {"id": self.BIG}

    async def test_a_runs_input_and_output_holding_one_read_back(self, store: Store) -> None:
        record = run(new_id(), initial_input={"ids": [1, self.BIG]}, started_at=at(0))
        assert await store.insert_run(record) == record
        assert await store.update_run(record.id, 1, {"final_output": {"n": -self.BIG}})
        stored = await store.get_run(record.id)
        assert stored is not None
        assert (stored.initial_input, stored.final_output) == (
            {"ids": [1, self.BIG]},
            {"n": -self.BIG},
        )
        # Set plainly again, the output is the new value (nothing of the old one is left).
        assert await store.update_run(record.id, 2, {"final_output": {"n": 1}})
        stored = await store.get_run(record.id)
        assert stored is not None and stored.final_output == {"n": 1}
        headers, _ = await store.list_runs(record.workflow_definition_id)
        assert [h.initial_input for h in headers] == [{"ids": [1, self.BIG]}]

    async def test_a_node_runs_output_and_its_events_holding_one_read_back(
        self, store: Store
    ) -> None:
        run_id = await _stored_run(store)
        record = node_run(run_id, output_snapshot={"n": self.BIG}, started_at=at(1), rev=1)
        assert await store.upsert_node_run(record)
        assert await store.get_node_run(record.id) == record
        assert await store.list_node_runs([run_id]) == [record]
        page, total = await store.node_run_page(run_id, 0, 10)
        assert (page, total) == ([record], 1)

        fields = {"id": record.id, "input_snapshot": {"m": self.BIG}, "rev": 2}
        event = {"type": "node_completed", "output": {"n": self.BIG}}
        assert await store.merge_node_run(fields, [event])
        merged = await store.get_node_run(record.id)
        assert merged is not None
        assert (merged.input_snapshot, merged.output_snapshot) == ({"m": self.BIG}, {"n": self.BIG})
        events = await store.list_events(run_id, 0, 10)
        assert [(e["type"], e["output"]) for e in events] == [("node_completed", {"n": self.BIG})]


class TestKeysHoldingANul:
    """JSON keys may hold any character; every store keeps a NUL in one (BSON's key names
    end at a NUL)."""

    KEY = "a\x00b"

    async def test_a_definition_holding_one_reads_back_and_saves_again(self, store: Store) -> None:
        base = workflow()
        nodes = [base.nodes[0].model_copy(update={"config": {self.KEY: 1}})]
        record = base.model_copy(update={"nodes": nodes})
        await store.create_workflow(record)
        assert await store.get_workflow(record.id) == record
        items, _ = await store.list_workflows(None, 1, 10)
        assert items == [record]

        again = [base.nodes[0].model_copy(update={"config": {"x": {self.KEY: 2}}})]
        changed = record.model_copy(update={"nodes": again, "version": 2})
        await store.update_workflow(changed, True)
        assert await store.get_workflow(record.id) == changed
        first = await store.get_workflow_version(record.id, 1)
        assert first is not None and first.definition.nodes[0].config == {self.KEY: 1}

    async def test_a_runs_input_and_output_holding_one_read_back(self, store: Store) -> None:
        record = run(new_id(), initial_input={"k\x00": [{self.KEY: 1}]}, started_at=at(0))
        assert await store.insert_run(record) == record
        assert await store.update_run(record.id, 1, {"final_output": {self.KEY: None}})
        stored = await store.get_run(record.id)
        assert stored is not None
        assert (stored.initial_input, stored.final_output) == (
            {"k\x00": [{self.KEY: 1}]},
            {self.KEY: None},
        )
        assert await store.update_run(record.id, 2, {"final_output": {"plain": 1}})
        stored = await store.get_run(record.id)
        assert stored is not None and stored.final_output == {"plain": 1}
        headers, _ = await store.list_runs(record.workflow_definition_id)
        assert [h.initial_input for h in headers] == [{"k\x00": [{self.KEY: 1}]}]

    async def test_a_node_runs_output_and_its_events_holding_one_read_back(
        self, store: Store
    ) -> None:
        run_id = await _stored_run(store)
        record = node_run(run_id, output_snapshot={self.KEY: 1}, started_at=at(1), rev=1)
        assert await store.upsert_node_run(record)
        assert await store.get_node_run(record.id) == record
        assert await store.list_node_runs([run_id]) == [record]
        page, total = await store.node_run_page(run_id, 0, 10)
        assert (page, total) == ([record], 1)

        fields = {"id": record.id, "input_snapshot": {self.KEY: 2}, "rev": 2}
        event = {"type": "node_completed", "output": {self.KEY: 1}}
        assert await store.merge_node_run(fields, [event])
        merged = await store.get_node_run(record.id)
        assert merged is not None
        assert (merged.input_snapshot, merged.output_snapshot) == ({self.KEY: 2}, {self.KEY: 1})
        events = await store.list_events(run_id, 0, 10)
        assert [(e["type"], e["output"]) for e in events] == [("node_completed", {self.KEY: 1})]

    @pytest.mark.parametrize("held", [{KEY: 1}, {"n": 2**70}], ids=["nul-key", "big-int"])
    async def test_a_run_whose_open_gate_holds_one_is_a_gated_run(
        self, store: Store, held: dict[str, int]
    ) -> None:
        # MongoDB keeps such open gates as text: they were not found as open gates there.
        gate = [{"stepId": "step-1", "kind": "output_review", "stepOutput": held}]
        record = run(new_id(), status="awaiting_approval", pending_requirements=gate)
        await store.insert_run(record)
        assert await store.list_gated_runs("awaiting_approval", 10) == [GatedRun.of(record)]
        assert await store.update_run(record.id, 1, {"pending_requirements": []})
        assert await store.list_gated_runs("awaiting_approval", 10) == []


class TestLifecycle:
    async def test_ping_succeeds_when_connected(self, store: Store) -> None:
        await store.ping()

    async def test_data_survives_close_and_reopen(self, store_factory: StoreFactory) -> None:
        first = store_factory()
        await first.connect()
        record = workflow()
        await first.create_workflow(record)
        event_id = await first.append_event("r1", {"type": "x"})
        await first.close()
        second = store_factory()
        await second.connect()
        try:
            assert await second.get_workflow(record.id) == record
            assert await second.append_event("r1", {"type": "y"}) > event_id
        finally:
            await second.close()


async def _stored_run(store: Store) -> str:
    """A run in the store (node runs are merged only into a run it has); its id."""
    record = run(new_id())
    await store.insert_run(record)
    return record.id
