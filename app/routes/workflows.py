"""Workflow definitions: list, get, create, update, delete, toggle (contract sections 1-6)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from activities.store.records import WorkflowRecord
from app.auth.acl import viewer_of
from app.auth.caller import READ, WRITE
from app.auth.guard import CallerDep, needs
from app.deps import DefinitionsDep, Page, PerPage, StoreDep, WorkflowDep
from app.openapi import API_PREFIX, errors
from app.routes.conditional import IfMatch
from app.schemas.workflow import (
    Pagination,
    ToggleRequest,
    WorkflowCreate,
    WorkflowPage,
    WorkflowPublic,
    WorkflowSummary,
    WorkflowUpdate,
)
from app.services.precondition import content_tag, require_match, tagged

router = APIRouter(prefix=API_PREFIX + "/workflows", tags=["workflows"])
DUPLICATE_NAME = "duplicate_entry: another workflow has this name"


@router.get("", dependencies=[needs(READ)])
async def list_workflows(
    store: StoreDep,
    caller: CallerDep,
    query: Annotated[str | None, Query(max_length=200)] = None,
    page: Page = 1,
    per_page: PerPage = 20,
) -> WorkflowPage:
    """Definitions matching `query` (name or description), newest-updated first."""
    viewer = viewer_of(caller)
    records, total = await store.list_workflows(query or None, page, per_page, viewer)
    return WorkflowPage(
        workflows=[WorkflowSummary.from_record(r) for r in records],
        pagination=Pagination.of(total, page, per_page),
    )


@router.get("/{workflow_id}", dependencies=[needs(READ)])
async def get_workflow(workflow: WorkflowDep, response: Response) -> WorkflowPublic:
    """One definition with its whole node tree (and its `ETag`, for `If-Match`)."""
    return tagged(response, WorkflowPublic.from_record(workflow))


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    dependencies=[needs(WRITE)],
    responses=errors(409, s409=DUPLICATE_NAME),
)
async def create_workflow(
    body: WorkflowCreate, definitions: DefinitionsDep, caller: CallerDep, response: Response
) -> WorkflowPublic:
    """Validate and store a new definition (version 1, disabled), owned by the caller."""
    created = await definitions.create(body, owner=caller.sub)
    return tagged(response, WorkflowPublic.from_record(created))


@router.put(
    "/{workflow_id}",
    dependencies=[needs(WRITE, "EDIT")],
    responses=errors(409, 412, s409=DUPLICATE_NAME),
)
async def update_workflow(
    workflow: WorkflowDep,
    body: WorkflowUpdate,
    definitions: DefinitionsDep,
    caller: CallerDep,
    response: Response,
    if_match: IfMatch = None,
) -> WorkflowPublic:
    """Change any fields; a changed definition becomes a new version. 412 when `If-Match`
    is not the workflow's current `ETag` (someone changed it since it was read)."""

    def as_read(record: WorkflowRecord) -> None:
        shown = content_tag(WorkflowPublic.from_record(record))
        require_match(if_match, shown, f"Workflow {record.id}")

    saved = await definitions.update(workflow, body, expected=as_read, saved_by=caller.sub)
    return tagged(response, WorkflowPublic.from_record(saved))


@router.delete(
    "/{workflow_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    dependencies=[needs(WRITE, "DELETE")],
    # Its open runs are cancelled first, which needs Temporal.
    responses=errors(503),
)
async def delete_workflow(workflow: WorkflowDep, definitions: DefinitionsDep) -> Response:
    """Delete a definition with its versions and runs."""
    await definitions.delete(workflow)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{workflow_id}/toggle", dependencies=[needs(WRITE, "EDIT")])
async def toggle_workflow(
    workflow: WorkflowDep, body: ToggleRequest, definitions: DefinitionsDep, response: Response
) -> WorkflowPublic:
    """Enable or disable a definition."""
    toggled = await definitions.toggle(workflow, body.enabled)
    return tagged(response, WorkflowPublic.from_record(toggled))
