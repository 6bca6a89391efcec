"""Response bodies of the lineage endpoints (retry, node rerun, replay)."""

from __future__ import annotations

from pydantic import BaseModel

from app.schemas.run_trigger import RunAccepted


class ChildRunAccepted(RunAccepted):
    """A child run was queued: the trigger response plus the run it descends from."""

    parent_run_id: str


class NodeRerunAccepted(BaseModel):
    """Contract 13's body, snake_case exactly as the contract shows it."""

    run_id: str
    status: str
    message: str
