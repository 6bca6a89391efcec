"""FastAPI dependencies: the app's parts, the caller, the services, and the lookups of path
parameters (400 for a malformed id, 404 for an unknown one), so routes only call a service.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, Header, Path, Query, Request
from pydantic import BeforeValidator, WithJsonSchema
from temporalio.client import Client

from activities.executors.catalog import Catalog
from activities.run_start import RunStarter
from activities.store.access import Guarded, WorkflowAccess
from activities.store.base import Store
from activities.store.records import (
    NodeRunRecord,
    RunRecord,
    WorkflowRecord,
    WorkflowVersionRecord,
)
from app.auth.acl import not_found, require
from app.auth.caller import Caller
from app.auth.guard import CallerDep, request_rule
from app.errors import Forbidden, InvalidRequest, NotFound
from app.header_text import as_sent
from app.services.approvals import ApprovalService
from app.services.controls import ControlService
from app.services.definitions import DefinitionService
from app.services.event_hub import EventHub
from app.services.graph import GraphService
from app.services.lineage import LineageService
from app.services.read_cache import ReadCache
from app.services.readiness import ReadinessProbe
from app.services.run_cancel import RunCanceller
from app.services.run_listing import RunListing
from app.services.runs import RunService
from app.services.schedule_removal import ScheduleRemover
from app.services.schedules import ScheduleService, schedule_prefix
from app.settings import Settings
from app.temporal_link import TemporalLink
from temporal_workflows.validation import NODE_ID_PATTERN

# The one id rule for path parameters (workflow, run, node-run ids) and node ids alike.
ID_PATTERN = NODE_ID_PATTERN
G = TypeVar("G", bound=Guarded)


def id_path(what: str) -> Any:
    """A path parameter holding an id: its rule is in the OpenAPI document; `check_id`
    enforces it (with a message naming the rule)."""
    return Path(
        description=f"The {what}.",
        json_schema_extra={"pattern": ID_PATTERN.pattern, "minLength": 1, "maxLength": 128},
    )


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def _whole_number(value: object) -> object:
    """A path or query integer must be written as one: pydantic's lax mode took "1.0"."""
    if isinstance(value, str) and not _WHOLE_NUMBER.fullmatch(value):
        raise ValueError("must be an integer")
    return value


# Every integer in a path or a query string (the body's are strict already).
WHOLE_NUMBER = BeforeValidator(_whole_number)

# Pages of every list (a page past the end is empty; past MAX_PAGE is refused).
MAX_PAGE = 1_000_000
Page = Annotated[int, Query(ge=1, le=MAX_PAGE), WHOLE_NUMBER]
PerPage = Annotated[int, Query(alias="perPage", ge=1, le=100), WHOLE_NUMBER]
# Opt-in for runs with thousands of node runs: their counts by status instead of the node
# runs themselves (a run, a page of runs); without it, the contract's shapes.
NodeRunsView = Annotated[Literal["all", "summary"], Query(alias="nodeRuns")]
# A page of runs of one schedule (a run's `scheduleId`); an id no schedule has lists none.
ScheduleIdFilter = Annotated[str | None, Query(alias="scheduleId", min_length=1, max_length=200)]

# Makes a request that starts a run (trigger, retry, rerun, replay) or creates a schedule
# safe to repeat: the same key and request answer the same run (app/services/idempotency.py)
# or schedule (app/services/schedule_key.py).
IdempotencyKey = Annotated[
    str | None, Header(alias="Idempotency-Key", min_length=1, max_length=200)
]
KEY_REUSED = "conflict: the Idempotency-Key was first used with a different request"


def check_id(value: str, what: str) -> str:
    """`value` when it is a well-formed id; InvalidRequest (400) naming `what` otherwise."""
    if not ID_PATTERN.fullmatch(value):
        raise InvalidRequest(
            f"Invalid {what} {value[:140]!r}: ids are 1-128 letters, digits, '_', '.', ':' or '-' "
            "and start with a letter or digit"
        )
    return value


# -- the app's parts ---------------------------------------------------------


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_store(request: Request) -> Store:
    return request.app.state.store  # type: ignore[no-any-return]


async def get_read_cache(request: Request) -> ReadCache:
    return request.app.state.read_cache  # type: ignore[no-any-return]


async def get_catalog(request: Request) -> Catalog:
    return request.app.state.catalog  # type: ignore[no-any-return]


async def get_event_hub(request: Request) -> EventHub:
    return request.app.state.event_hub  # type: ignore[no-any-return]


async def get_temporal_link(request: Request) -> TemporalLink:
    return request.app.state.temporal_link  # type: ignore[no-any-return]


TemporalLinkDep = Annotated[TemporalLink, Depends(get_temporal_link)]


async def get_temporal(request: Request, link: TemporalLinkDep) -> Client:
    """The Temporal client; 503 `service_unavailable` when Temporal cannot be reached."""
    client = await link.require()
    request.app.state.temporal = client
    return client


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
ReadCacheDep = Annotated[ReadCache, Depends(get_read_cache)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
EventHubDep = Annotated[EventHub, Depends(get_event_hub)]
TemporalDep = Annotated[Client, Depends(get_temporal)]


# -- services ------------------------------------------------------------------


async def get_run_starter(
    store: StoreDep, temporal: TemporalDep, settings: SettingsDep
) -> RunStarter:
    """The one start path, with the API's task queue and default gate timeout."""
    return RunStarter(
        store,
        temporal,
        task_queue=settings.task_queue,
        default_gate_timeout_seconds=settings.default_gate_timeout_seconds,
        max_output_bytes=settings.max_payload_bytes,
    )


RunStarterDep = Annotated[RunStarter, Depends(get_run_starter)]


async def get_definitions(
    store: StoreDep, catalog: CatalogDep, link: TemporalLinkDep
) -> DefinitionService:
    # Deleting a workflow deletes its schedules and cancels its open runs first.
    return DefinitionService(
        store=store,
        catalog=catalog,
        run_canceller=RunCanceller(store, link),
        schedule_remover=ScheduleRemover(link, store),
    )


async def get_runs(store: StoreDep, starter: RunStarterDep, caller: CallerDep) -> RunService:
    return RunService(store=store, starter=starter, caller=caller)


async def get_lineage(store: StoreDep, starter: RunStarterDep, caller: CallerDep) -> LineageService:
    return LineageService(store=store, starter=starter, triggered_by=caller.identity())


async def get_controls(
    temporal: TemporalDep, store: StoreDep, caller: CallerDep, settings: SettingsDep
) -> ControlService:
    return ControlService(
        temporal=temporal, store=store, caller=caller, max_output_bytes=settings.max_payload_bytes
    )


async def get_schedules(
    temporal: TemporalDep, store: StoreDep, settings: SettingsDep, caller: CallerDep
) -> ScheduleService:
    return ScheduleService(
        client=temporal,
        store=store,
        task_queue=settings.task_queue,
        default_gate_timeout_seconds=settings.default_gate_timeout_seconds,
        created_by=caller.identity(),
        requested_by=caller.sub,
        max_per_workflow=settings.max_schedules_per_workflow,
    )


async def get_readiness(
    store: StoreDep, link: TemporalLinkDep, settings: SettingsDep
) -> ReadinessProbe:
    return ReadinessProbe(
        store=store,
        temporal=link,
        store_url=settings.resolved_store_url,
        task_queue=settings.task_queue,
    )


async def get_run_listing(store: StoreDep, settings: SettingsDep) -> RunListing:
    return RunListing(store=store, max_bytes=settings.max_response_bytes)


async def get_approvals(store: StoreDep) -> ApprovalService:
    return ApprovalService(store=store)


async def get_graphs(store: StoreDep) -> GraphService:
    return GraphService(store=store)


DefinitionsDep = Annotated[DefinitionService, Depends(get_definitions)]
RunServiceDep = Annotated[RunService, Depends(get_runs)]
RunListingDep = Annotated[RunListing, Depends(get_run_listing)]
LineageDep = Annotated[LineageService, Depends(get_lineage)]
ControlsDep = Annotated[ControlService, Depends(get_controls)]
SchedulesDep = Annotated[ScheduleService, Depends(get_schedules)]
ApprovalsDep = Annotated[ApprovalService, Depends(get_approvals)]
GraphDep = Annotated[GraphService, Depends(get_graphs)]
ReadinessDep = Annotated[ReadinessProbe, Depends(get_readiness)]


# -- lookups of path parameters ------------------------------------------------

# The ids a path may hold, as their errors name them.
PATH_IDS = {
    "workflow_id": "workflow id",
    "run_id": "run id",
    "node_run_id": "node run id",
    "node_id": "node id",
    "schedule_id": "schedule id",
}


def check_path_ids(request: Request) -> None:
    """Every id in the request's path, in order, before any is looked up: a malformed run
    id under an unknown workflow is a 400 (the id's fault), not the workflow's 404."""
    for name, value in request.path_params.items():
        if name in PATH_IDS:
            check_id(value, PATH_IDS[name])


async def get_workflow_or_404(
    workflow_id: Annotated[str, id_path("workflow id")],
    store: StoreDep,
    caller: CallerDep,
    request: Request,
) -> WorkflowRecord:
    """The workflow named in the path: 400 when the id is malformed, 404 when unknown or
    not visible to the caller, 403 when the route's permission is more than they hold."""
    check_path_ids(request)
    record = await store.get_workflow(workflow_id)
    return _permitted(record, workflow_id, caller, request)


async def get_workflow_access_or_404(
    workflow_id: Annotated[str, id_path("workflow id")],
    store: StoreDep,
    caller: CallerDep,
    request: Request,
) -> WorkflowAccess:
    """The workflow in the path as its ACL alone, checked as `get_workflow_or_404` checks it.

    Everything under a workflow (runs, node runs, events) is looked up through here, so it
    inherits the workflow's ACL without its definition being read.
    """
    check_path_ids(request)
    access = await store.get_workflow_access(workflow_id)
    return _permitted(access, workflow_id, caller, request)


def _permitted(found: G | None, workflow_id: str, caller: Caller, request: Request) -> G:
    if found is None:
        raise not_found(workflow_id)
    rule = request_rule(request)
    if rule is None:  # cannot happen: every route declares one (check_routes)
        raise Forbidden("This route declares no permission")
    require(caller, found, rule.permission)
    return found


WorkflowDep = Annotated[WorkflowRecord, Depends(get_workflow_or_404)]
WorkflowAccessDep = Annotated[WorkflowAccess, Depends(get_workflow_access_or_404)]


async def get_version_or_404(
    workflow: WorkflowDep,
    version: Annotated[int, Path(ge=1, le=2**31 - 1), WHOLE_NUMBER],
    store: StoreDep,
) -> WorkflowVersionRecord:
    """One kept version of the workflow in the path; 404 when it has no such version."""
    record = await store.get_workflow_version(workflow.id, version)
    if record is None:
        raise NotFound(f"Workflow {workflow.id!r} has no version {version}")
    return record


async def run_not_found(store: Store, caller: Caller, run_id: str, said: str) -> NotFound:
    """The 404 for a run the store does not hold (`said`), or for one it deleted, saying so:
    only to the dev admin, who may see every workflow. The store's trace of a deleted run
    names no workflow, so no ACL can say who else may learn that it existed."""
    if caller.admin and await store.run_was_deleted(run_id):
        return NotFound(
            f"Run {run_id!r} is no longer in the store: it ended and was deleted under run "
            "retention (TRELLIS_RUN_RETENTION_DAYS) or with its workflow"
        )
    return NotFound(said)


async def get_run_or_404(
    run_id: Annotated[str, id_path("run id")],
    workflow: WorkflowAccessDep,
    store: StoreDep,
    caller: CallerDep,
) -> RunRecord:
    """The run named in the path, which must belong to the workflow in the path (its id
    checked with the path's others, by the workflow's lookup)."""
    run = await store.get_run(run_id)
    said = f"Run {run_id!r} not found for workflow {workflow.id!r}"
    if run is None:
        raise await run_not_found(store, caller, run_id, said)
    if run.workflow_definition_id != workflow.id:
        raise NotFound(said)
    return run


RunDep = Annotated[RunRecord, Depends(get_run_or_404)]


async def get_any_run_or_404(
    run_id: Annotated[str, id_path("run id")],
    store: StoreDep,
    caller: CallerDep,
    request: Request,
) -> RunRecord:
    """A run named by its id alone; 404 unless its workflow is found as the workflow
    lookup finds it (so whatever hides a workflow hides its runs here too)."""
    run = await store.get_run(check_id(run_id, "run id"))
    if run is None:
        raise await run_not_found(store, caller, run_id, f"Run {run_id!r} not found")
    try:
        await get_workflow_access_or_404(run.workflow_definition_id, store, caller, request)
    except NotFound:
        raise NotFound(f"Run {run_id!r} not found") from None
    return run


AnyRunDep = Annotated[RunRecord, Depends(get_any_run_or_404)]


async def get_node_run_or_404(
    node_run_id: Annotated[str, id_path("node run id")], run: RunDep, store: StoreDep
) -> NodeRunRecord:
    """The node run named in the path, which must belong to the run in the path (its id
    checked with the path's others, by the workflow's lookup)."""
    record = await store.get_node_run(node_run_id)
    if record is None or record.workflow_run_id != run.id:
        raise NotFound(f"Node run {node_run_id!r} not found in run {run.id!r}")
    return record


async def get_node_id(node_id: Annotated[str, id_path("node id")]) -> str:
    """A node id from the path (whether the run has it is the service's question)."""
    return check_id(node_id, "node id")


async def get_schedule_id(
    schedule_id: Annotated[str, id_path("schedule id")], workflow: WorkflowDep
) -> str:
    """A schedule id of the workflow in the path (Temporal says whether it exists); its
    form checked with the path's other ids, by the workflow's lookup."""
    if not schedule_id.startswith(schedule_prefix(workflow.id)):
        raise NotFound(f"Schedule {schedule_id!r} not found for workflow {workflow.id!r}")
    return schedule_id


# The largest event id a request may name: 18 digits, within the stores' 64-bit integers
# (a larger one reached SQLite and was a 500).
MAX_EVENT_ID = 10**18 - 1
# An event id: digits (or empty: from the start); left out rather than null.
_EVENT_ID = WithJsonSchema({"type": "string", "pattern": "^[0-9]{0,18}$"})


async def get_last_event_id(
    header: Annotated[str | None, Header(alias="Last-Event-ID"), _EVENT_ID] = None,
    query: Annotated[str | None, Query(alias="lastEventId"), _EVENT_ID] = None,
) -> int:
    """Where a resumed event stream continues (`Last-Event-ID`, or `?lastEventId=`); 0 if new.

    The header wins (a browser's EventSource sends it on reconnecting), but a malformed
    query is a 400 all the same: it was ignored whenever the header came too."""
    for name, given in (("lastEventId", query), ("Last-Event-ID", header)):
        if given and not (given.isdigit() and given.isascii() and len(given) <= 18):
            shown = as_sent(given) if name == "Last-Event-ID" else given
            raise InvalidRequest(
                f"Invalid {name} {shown[:40]!r}: an event id is a non-negative integer "
                "of at most 18 digits (0-9 only; empty or left out: from the first event)"
            )
    value = header or query
    return int(value) if value else 0


WorkflowVersionDep = Annotated[WorkflowVersionRecord, Depends(get_version_or_404)]
NodeRunDep = Annotated[NodeRunRecord, Depends(get_node_run_or_404)]
NodeIdDep = Annotated[str, Depends(get_node_id)]
ScheduleIdDep = Annotated[str, Depends(get_schedule_id)]
LastEventIdDep = Annotated[int, Depends(get_last_event_id)]
