"""FastAPI dependencies: the app's parts, and path lookups (400 malformed id, 404 unknown)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from temporalio.client import Client

from activities.executors.catalog import Catalog
from activities.run_start import RunStarter
from activities.store.base import Store
from activities.store.records import WorkflowRecord, WorkflowVersionRecord
from app.errors import InvalidRequest, NotFound
from app.services.definitions import DefinitionService
from app.services.run_cancel import RunCanceller
from app.settings import Settings
from app.temporal_link import TemporalLink
from temporal_workflows.validation import NODE_ID_PATTERN

# The one id rule for path parameters (workflow, run, node-run ids) and node ids alike.
ID_PATTERN = NODE_ID_PATTERN


def check_id(value: str, what: str) -> str:
    """`value` when it is a well-formed id; InvalidRequest (400) naming `what` otherwise."""
    if not ID_PATTERN.match(value):
        raise InvalidRequest(
            f"Invalid {what} {value[:140]!r}: ids are 1-128 letters, digits, '_', '.', ':' or '-' "
            "and start with a letter or digit"
        )
    return value


def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def get_store(request: Request) -> Store:
    return request.app.state.store  # type: ignore[no-any-return]


def get_catalog(request: Request) -> Catalog:
    return request.app.state.catalog  # type: ignore[no-any-return]


def get_temporal_link(request: Request) -> TemporalLink:
    return request.app.state.temporal_link  # type: ignore[no-any-return]


TemporalLinkDep = Annotated[TemporalLink, Depends(get_temporal_link)]


async def get_temporal(request: Request, link: TemporalLinkDep) -> Client:
    """The Temporal client; 503 `service_unavailable` when Temporal cannot be reached."""
    client = await link.require()
    request.app.state.temporal = client
    return client


SettingsDep = Annotated[Settings, Depends(get_settings)]
StoreDep = Annotated[Store, Depends(get_store)]
CatalogDep = Annotated[Catalog, Depends(get_catalog)]
TemporalDep = Annotated[Client, Depends(get_temporal)]


def get_run_starter(store: StoreDep, temporal: TemporalDep, settings: SettingsDep) -> RunStarter:
    """The one start path, with the API's task queue and default gate timeout."""
    return RunStarter(
        store,
        temporal,
        task_queue=settings.task_queue,
        default_gate_timeout_seconds=settings.default_gate_timeout_seconds,
    )


RunStarterDep = Annotated[RunStarter, Depends(get_run_starter)]


def get_definitions(
    store: StoreDep, catalog: CatalogDep, link: TemporalLinkDep
) -> DefinitionService:
    # Deleting a workflow cancels its open runs first (dialling Temporal only if any).
    return DefinitionService(store=store, catalog=catalog, run_canceller=RunCanceller(store, link))


DefinitionsDep = Annotated[DefinitionService, Depends(get_definitions)]


async def get_workflow_or_404(workflow_id: str, store: StoreDep) -> WorkflowRecord:
    """The workflow named in the path: 400 when the id is malformed, 404 when unknown."""
    record = await store.get_workflow(check_id(workflow_id, "workflow id"))
    if record is None:
        raise NotFound(f"Workflow {workflow_id!r} not found")
    return record


WorkflowDep = Annotated[WorkflowRecord, Depends(get_workflow_or_404)]


async def get_version_or_404(
    workflow: WorkflowDep, version: Annotated[int, Path(ge=1)], store: StoreDep
) -> WorkflowVersionRecord:
    """One kept version of the workflow in the path; 404 when it has no such version."""
    record = await store.get_workflow_version(workflow.id, version)
    if record is None:
        raise NotFound(f"Workflow {workflow.id!r} has no version {version}")
    return record


WorkflowVersionDep = Annotated[WorkflowVersionRecord, Depends(get_version_or_404)]
