"""Request and response bodies of the schedule endpoints (recurring runs on Temporal Schedules)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import available_timezones

from pydantic import ConfigDict, Field, field_validator, model_validator

from app.schemas.cron import CRON_PATTERN, MACROS, is_cron
from app.schemas.omittable import not_null, omittable
from app.schemas.run_data import run_data
from temporal_workflows.base import INTEGRAL, CamelModel

OverlapPolicy = Literal[
    "skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"
]


# The IANA zones this machine knows; the schema lists them. `localtime` is no IANA name
# but a link to the machine's own zone (/etc/localtime), which Temporal's server would
# read from its own machine.
TIME_ZONES: list[Any] = sorted((available_timezones() - {"localtime"}) | {"UTC"})
_ZONES = frozenset(TIME_ZONES)


# A schedule's fields a GET shows that no body sets (SchedulePublic's own).
SHOWN_ONLY = frozenset(
    {"id", "workflowId", "note", "numActions", "nextActionTimes", "recentActions"}
    | {"numActionsSkippedOverlap", "numActionsMissedCatchupWindow", "createdAt", "updatedAt"}
    | {"createdBy"}
)


class ScheduleCreate(CamelModel):
    """POST and PUT body (PUT replaces the whole schedule): a cron or an interval, not both.
    Any other field is refused (400), except those only a GET shows (id, workflowId, note,
    numActions, numActionsSkippedOverlap, numActionsMissedCatchupWindow, nextActionTimes,
    recentActions, createdAt, updatedAt, createdBy), which are ignored: a GET's body, its nulls left
    out, can be PUT back."""

    # The schema states exactly one of `cron` and `intervalSeconds` (oneOf), the cron
    # grammar (a pattern) and the zones; the validators below enforce the same rules.
    # Unknown fields are refused: a misspelt `timezone` ran in UTC, and a `startAt` or a
    # `jitterSeconds` (Temporal's, not offered here) made a schedule that ran at once.
    # What a GET shows and a body cannot set is dropped, so a schedule read can be PUT back.
    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra=omittable(
            "cron",
            "intervalSeconds",
            extra={
                "oneOf": [
                    {"required": ["cron"], "not": {"required": ["intervalSeconds"]}},
                    {"required": ["intervalSeconds"], "not": {"required": ["cron"]}},
                ],
                "examples": [
                    {"cron": "0 9 * * MON-FRI", "timeZone": "Europe/Berlin"},
                    {"intervalSeconds": 3600, "initialInput": {"report": "hourly"}},
                ],
            },
        ),
    )

    cron: str | None = Field(
        default=None,
        max_length=200,
        json_schema_extra={"pattern": CRON_PATTERN},
        description="Five fields, or @daily and friends; a backwards range wraps.",
    )
    interval_seconds: Annotated[int, Field(ge=1, le=366 * 86_400), INTEGRAL] | None = None

    _given = field_validator("cron", "interval_seconds", mode="before")(not_null)
    time_zone: str = Field(default="UTC", json_schema_extra={"enum": TIME_ZONES})
    initial_input: Annotated[dict[str, Any], run_data("initialInput")] = Field(default_factory=dict)
    overlap_policy: OverlapPolicy = "skip"
    paused: bool = False

    @model_validator(mode="before")
    @classmethod
    def _shown_only_dropped(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k not in SHOWN_ONLY}
        return data

    @field_validator("cron")
    @classmethod
    def _cron_grammar(cls, value: str | None) -> str | None:
        if value is not None and not is_cron(value):
            raise ValueError(
                f"{value[:200]!r} is not a cron expression this API accepts: five fields "
                "(minute hour day-of-month month day-of-week) of *, values, ranges and "
                f"/steps, or one of {', '.join(MACROS)} (see docs)"
            )
        return value

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if value not in _ZONES:
            raise ValueError(f"unknown IANA time zone {value[:64]!r}")
        return value

    @model_validator(mode="after")
    def _one_timing(self) -> ScheduleCreate:
        if (self.cron is None) == (self.interval_seconds is None):
            raise ValueError("give exactly one of cron and intervalSeconds")
        return self


class ScheduleActionPublic(CamelModel):
    """One firing: when it was due, when it fired, the trigger workflow it started and the
    run that started (None: a skip, a run deleted, or one recorded before runs named it)."""

    scheduled_at: datetime
    started_at: datetime
    trigger_workflow_id: str
    run_id: str | None = None


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
    # Firings the overlap policy skipped, and firings missed by more than the catch-up
    # window (both Temporal's counts; no trigger ran for them, so no skip is logged).
    num_actions_skipped_overlap: int = 0
    num_actions_missed_catchup_window: int = 0
    next_action_times: list[datetime]
    recent_actions: list[ScheduleActionPublic]
    created_at: datetime
    updated_at: datetime | None = None
    # The creating caller's `sub` (`dev` in dev mode); null for schedules made before
    # Trellis recorded it. Pause and unpause name their caller in `note`.
    created_by: str | None = None


class ScheduleList(CamelModel):
    schedules: list[SchedulePublic]


class ScheduleSkip(CamelModel):
    """A firing that started no run, and why (e.g. `workflow disabled`)."""

    id: int
    reason: str
    timestamp: datetime


class ScheduleFired(CamelModel):
    """The 202 of a manual trigger: the schedule fires once; its run shows up in the list."""

    schedule_id: str
    message: str = (
        "Schedule fired; its run starts shortly, unless the overlap policy skips this firing "
        "or the schedule is deleted before the run starts"
    )


class ScheduleSkipList(CamelModel):
    skips: list[ScheduleSkip]
