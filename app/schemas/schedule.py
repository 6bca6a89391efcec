"""Request and response bodies of the schedule endpoints (recurring runs on Temporal Schedules)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from temporal_workflows.base import CamelModel

OverlapPolicy = Literal[
    "skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"
]


class ScheduleCreate(CamelModel):
    """POST and PUT body (PUT replaces the whole schedule): a cron or an interval, not both."""

    cron: str | None = Field(default=None, min_length=1, max_length=200)
    interval_seconds: int | None = Field(default=None, ge=1, le=366 * 86_400)
    time_zone: str = Field(default="UTC", min_length=1, max_length=64)
    initial_input: dict[str, Any] = Field(default_factory=dict)
    overlap_policy: OverlapPolicy = "skip"
    paused: bool = False

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown IANA time zone {value!r}") from None
        return value

    @model_validator(mode="after")
    def _one_timing(self) -> ScheduleCreate:
        if (self.cron is None) == (self.interval_seconds is None):
            raise ValueError("give exactly one of cron and intervalSeconds")
        return self


class ScheduleActionPublic(CamelModel):
    """One firing: when it was due, when it fired, the trigger workflow it started."""

    scheduled_at: datetime
    started_at: datetime
    trigger_workflow_id: str


class SchedulePublic(CamelModel):
    id: str
    workflow_id: str
    cron: str | None = None
    interval_seconds: int | None = None
    time_zone: str
    initial_input: dict[str, Any]
    overlap_policy: OverlapPolicy
    paused: bool
    note: str | None = None
    num_actions: int
    next_action_times: list[datetime]
    recent_actions: list[ScheduleActionPublic]
    created_at: datetime
    updated_at: datetime | None = None


class ScheduleList(CamelModel):
    schedules: list[SchedulePublic]


class ScheduleSkip(CamelModel):
    """A firing that started no run, and why (e.g. `workflow disabled`)."""

    id: int
    reason: str
    timestamp: datetime


class ScheduleSkipList(CamelModel):
    skips: list[ScheduleSkip]
