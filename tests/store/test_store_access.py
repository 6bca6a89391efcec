"""The Store contract for workflow ACLs: owners and grants kept, lists filtered in the query."""

from __future__ import annotations

import pytest

from activities.store.access import Grant, WorkflowAccess
from activities.store.base import ChangedMeanwhile, Store
from tests.store.builders import at, new_id, run, workflow

ALICE = frozenset({"user:alice"})
BOB_IN_OPS = frozenset({"user:bob", "role:ops"})
CAROL = frozenset({"user:carol"})


def grant(principal: str, *permissions: str) -> Grant:
    return Grant.model_validate({"principal": principal, "permissions": list(permissions)})


async def test_owner_and_grants_read_back(store: Store) -> None:
    record = workflow(owner="alice", grants=[grant("role:ops", "EDIT")])
    await store.create_workflow(record)
    stored = await store.get_workflow(record.id)
    assert stored is not None and stored.owner == "alice"
    assert stored.grants == [grant("role:ops", "VIEW", "EDIT")]


async def test_a_workflows_access_reads_back_without_its_definition(store: Store) -> None:
    record = workflow(owner="alice", grants=[grant("role:ops", "EDIT")])
    await store.create_workflow(record)
    access = await store.get_workflow_access(record.id)
    assert access == WorkflowAccess(
        id=record.id, owner="alice", grants=[grant("role:ops", "VIEW", "EDIT")]
    )
    await store.set_workflow_grants(record.id, [])
    assert await store.get_workflow_access(record.id) == WorkflowAccess(id=record.id, owner="alice")
    assert await store.get_workflow_access(new_id()) is None


async def test_lists_and_totals_count_only_what_a_viewer_may_see(store: Store) -> None:
    mine = workflow(owner="alice", updated_at=at(0))
    shared = workflow(owner="alice", grants=[grant("role:ops", "VIEW")], updated_at=at(1))
    theirs = workflow(owner="carol", grants=[grant("user:bob", "VIEW")], updated_at=at(2))
    for record in (mine, shared, theirs):
        await store.create_workflow(record)

    async def visible(viewer: frozenset[str]) -> tuple[list[str], int]:
        items, total = await store.list_workflows(None, 1, 10, viewer)
        return [r.id for r in items], total

    assert await visible(ALICE) == ([shared.id, mine.id], 2)
    assert await visible(BOB_IN_OPS) == ([theirs.id, shared.id], 2)
    assert await visible(frozenset({"user:nobody"})) == ([], 0)
    assert (await store.list_workflows(None, 1, 10))[1] == 3  # no viewer: everything


async def test_a_viewer_filter_combines_with_the_search(store: Store) -> None:
    hit = workflow("Invoices A", owner="alice")
    await store.create_workflow(hit)
    await store.create_workflow(workflow("Invoices B", owner="carol"))
    items, total = await store.list_workflows("invoices", 1, 10, ALICE)
    assert ([r.id for r in items], total) == ([hit.id], 1)


async def test_setting_grants_replaces_them_and_the_visibility(store: Store) -> None:
    record = workflow(owner="alice", grants=[grant("user:carol", "VIEW")])
    await store.create_workflow(record)
    assert await store.set_workflow_grants(record.id, [grant("role:ops", "VIEW", "SHARE")])
    stored = await store.get_workflow(record.id)
    assert stored is not None and stored.owner == "alice"
    assert stored.grants == [grant("role:ops", "VIEW", "SHARE")]
    assert (await store.list_workflows(None, 1, 10, CAROL))[1] == 0
    assert (await store.list_workflows(None, 1, 10, BOB_IN_OPS))[1] == 1


async def test_setting_grants_of_an_unknown_workflow_is_false(store: Store) -> None:
    assert not await store.set_workflow_grants(new_id(), [])


async def test_saving_a_definition_keeps_the_stored_acl(store: Store) -> None:
    record = workflow(owner="alice")
    await store.create_workflow(record)
    await store.set_workflow_grants(record.id, [grant("user:carol", "VIEW")])
    # A save that read the workflow before the grant changed must not undo it.
    stale = record.model_copy(update={"name": "renamed", "owner": "mallory", "version": 2})
    await store.update_workflow(stale, new_version=True)
    stored = await store.get_workflow(record.id)
    assert stored is not None and stored.name == "renamed"
    assert (stored.owner, stored.grants) == ("alice", [grant("user:carol", "VIEW")])
    assert (await store.list_workflows(None, 1, 10, CAROL))[1] == 1


async def test_a_deleted_workflow_is_visible_to_nobody(store: Store) -> None:
    record = workflow(owner="alice")
    await store.create_workflow(record)
    await store.delete_workflow(record.id)
    assert (await store.list_workflows(None, 1, 10, ALICE))[1] == 0


async def test_runs_by_status_only_of_visible_workflows(store: Store) -> None:
    mine = workflow(owner="alice")
    theirs = workflow(owner="carol")
    for record in (mine, theirs):
        await store.create_workflow(record)
    gate = [{"stepId": "step-1", "kind": "confirmation"}]
    mine_run = run(mine.id, status="awaiting_approval", pending_requirements=gate)
    theirs_run = run(theirs.id, status="awaiting_approval", pending_requirements=gate)
    for record in (mine_run, theirs_run):
        await store.insert_run(record)
    visible = await store.list_gated_runs("awaiting_approval", 10, ALICE)
    assert [r.id for r in visible] == [mine_run.id]
    assert len(await store.list_gated_runs("awaiting_approval", 10)) == 2
    assert await store.list_gated_runs("awaiting_approval", 10, frozenset()) == []


async def test_grants_set_over_what_was_read_are_refused_once_they_changed(store: Store) -> None:
    record = workflow(owner="alice", grants=[grant("user:carol", "VIEW")])
    await store.create_workflow(record)
    read = [grant("user:carol", "VIEW")]
    assert await store.set_workflow_grants(record.id, [grant("role:ops", "VIEW")], read=read)
    # A second writer that read the same grants: refused, and the first one's write stays.
    with pytest.raises(ChangedMeanwhile):
        await store.set_workflow_grants(record.id, [grant("user:bob", "EDIT")], read=read)
    stored = await store.get_workflow(record.id)
    assert stored is not None and stored.grants == [grant("role:ops", "VIEW")]
    assert (await store.list_workflows(None, 1, 10, frozenset({"user:bob"})))[1] == 0
    assert not await store.set_workflow_grants(new_id(), [], read=[])  # unknown: False


async def test_a_workflow_shared_with_no_one_is_read_as_having_no_grants(store: Store) -> None:
    record = workflow(owner="alice")
    await store.create_workflow(record)
    assert await store.set_workflow_grants(record.id, [grant("user:bob", "VIEW")], read=[])
    with pytest.raises(ChangedMeanwhile):
        await store.set_workflow_grants(record.id, [], read=[])
