"""`trellis schedules list | show | create | update | delete | pause | unpause | trigger |
skips`: a workflow's recurring runs (Temporal Schedules).

A bare schedule id is enough: the API names every schedule `sched-{workflowId}-{12 hex}`
(docs/lineage-events-schedules.md), so the id says whose it is."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import click
from rich.console import Group

from app.cli.api_client import if_match, segment
from app.cli.flag_pairs import OnOffFlag
from app.cli.id_argument import ID
from app.cli.limits import MAX_INTERVAL_SECONDS
from app.cli.option_values import initial_input, input_options, key_option
from app.cli.output import Session, api_options, compact, shown, table, when
from app.cli.schedule_firings import firing_runs, recent_skips

OVERLAP_POLICIES = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other",
                    "allow_all")  # fmt: skip
_SCHEDULE_ID = re.compile(r"sched-(?P<workflow>.+)-[0-9a-f]{12}")


def schedule_path(schedule_id: str) -> str:
    """`/workflows/{workflow}/schedules/{schedule}` for a bare schedule id."""
    found = _SCHEDULE_ID.fullmatch(schedule_id)
    if found is None:
        raise click.BadParameter(
            f"{schedule_id[:140]!r} is not a schedule id (sched-WORKFLOW_ID-HEX, "
            "as `trellis schedules list WORKFLOW_ID` shows)",
            param_hint="SCHEDULE_ID",
        )
    return f"/workflows/{segment(found['workflow'])}/schedules/{segment(schedule_id)}"


@click.group()
def schedules() -> None:
    """Schedules: a workflow's runs on a cron or an interval."""


@schedules.command("list")
@click.argument("workflow_id", type=ID)
@api_options
def list_schedules(session: Session, workflow_id: str) -> None:
    """A workflow's schedules, oldest first (a new one can take a moment to be listed)."""
    answer = session.api.get(f"/workflows/{segment(workflow_id)}/schedules")
    session.emit(answer, _schedule_table)


def _schedule_table(data: dict[str, Any]) -> Any:
    rows = [
        [s["id"], _timing(s), "paused" if s["paused"] else "active", s["overlapPolicy"],
         s["numActions"], when(_first(s["nextActionTimes"]))]
        for s in data["schedules"]
    ]  # fmt: skip
    columns = ["ID", "TIMING", "STATE", "OVERLAP", "FIRED", "NEXT"]
    return table(f"schedules ({len(rows)})", columns, rows)


def _timing(schedule: dict[str, Any]) -> str:
    if schedule.get("cron") is not None:
        return f"cron {schedule['cron']} ({schedule['timeZone']})"
    return f"every {schedule['intervalSeconds']} s"


def _first(values: list[str]) -> str | None:
    return values[0] if values else None


@schedules.command("show")
@click.argument("schedule_id", type=ID)
@api_options
def show_schedule(session: Session, schedule_id: str) -> None:
    """One schedule with its next and recent firings."""
    path = schedule_path(schedule_id)
    answer = session.api.get(path)
    # A table tells a skipped firing from one whose run is not recorded yet: --json does not.
    skips = [] if session.as_json else recent_skips(session, path, answer)
    session.emit(answer, lambda s: _schedule_detail(s, skips))


def _skipped(s: dict[str, Any]) -> str:
    """The firings that started nothing (an API before these counts sends none)."""
    overlap, missed = s.get("numActionsSkippedOverlap"), s.get("numActionsMissedCatchupWindow")
    said = [f"{overlap} skipped by its overlap policy" if overlap else ""]
    said.append(f"{missed} missed past the catch-up window" if missed else "")
    return "".join(f" ({part})" for part in said if part)


def _by(s: dict[str, Any]) -> str:
    """Who created the schedule (an API before this, or an older schedule, names none)."""
    return f" by {s['createdBy']}" if s.get("createdBy") else ""


def _schedule_detail(s: dict[str, Any], skips: Sequence[tuple[datetime, str]] = ()) -> Any:
    head = shown(
        (f"schedule {s['id']}", "bold"),
        ("  paused" if s["paused"] else "  active", "yellow" if s["paused"] else "green"),
        f"\nworkflow {s['workflowId']}, {_timing(s)}, overlap {s['overlapPolicy']}, "
        f"fired {s['numActions']} times{_skipped(s)}, created {when(s['createdAt'])}"
        f"{_by(s)}, "
        f"updated {when(s.get('updatedAt'))}",
        f"\ninput: {compact(s['initialInput'], 2000)}",
    )
    parts: list[Any] = [head]
    if s.get("note"):
        parts.append(shown(f"note: {s['note']}"))
    upcoming = [[when(t)] for t in s["nextActionTimes"]]
    if s.get("paused"):
        parts.append(shown("next firings: none while paused"))
    else:
        parts.append(table("next firings", ["AT"], upcoming))
    actions = s["recentActions"]
    recent = [[when(a["scheduledAt"]), when(a["startedAt"]), run, a["triggerWorkflowId"]]
              for a, run in zip(actions, firing_runs(actions, skips), strict=True)]  # fmt: skip
    parts.append(table("recent firings", ["DUE", "FIRED", "RUN", "TRIGGER WORKFLOW"], recent))
    parts.append(shown(f"its runs: trellis runs list {s['workflowId']} --schedule {s['id']}"))
    return Group(*parts)


def timing_options(func: Any) -> Any:
    """`--cron | --interval-seconds`, `--time-zone`, the input and `--overlap-policy`: what
    `create` sends and `update` changes."""
    options: list[Callable[[Any], Any]] = [
        click.option("--cron", default=None, metavar="EXPR",
                     help="five fields, or @daily and friends (or --interval-seconds)"),
        click.option("--interval-seconds", type=click.IntRange(1, MAX_INTERVAL_SECONDS),
                     default=None, metavar="N",
                     help="fire every N seconds (give this or --cron)"),
        click.option("--time-zone", default=None, metavar="TZ",
                     help="the cron's IANA time zone  [API default: UTC]"),
        input_options,
        click.option("--overlap-policy", type=click.Choice(OVERLAP_POLICIES), default=None,
                     help="a firing while the last one's start goes on  [API default: skip]"),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


@schedules.command("create")
@click.argument("workflow_id", type=ID)
@timing_options
@click.option("--paused", is_flag=True, help="create it paused (it fires once unpaused)")
@key_option
@api_options
def create_schedule(
    session: Session,
    workflow_id: str,
    cron: str | None,
    interval_seconds: int | None,
    time_zone: str | None,
    inputs: tuple[str, ...],
    input_json: str | None,
    overlap_policy: str | None,
    paused: bool,
    key: str | None,
) -> None:
    """Create a schedule: each firing starts a run of the workflow's current version."""
    if cron is None and interval_seconds is None:
        raise click.UsageError("give --cron EXPR or --interval-seconds N: when it fires")
    _one_timing(cron, interval_seconds)
    given = {"cron": cron, "intervalSeconds": interval_seconds, "timeZone": time_zone,
             "overlapPolicy": overlap_policy}  # fmt: skip
    # Left out rather than null: the API refuses a null, and its defaults are its own.
    body: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if inputs or input_json:
        body["initialInput"] = initial_input(inputs, input_json)
    if paused:
        body["paused"] = True
    answer = session.api.post(f"/workflows/{segment(workflow_id)}/schedules", body, key)
    session.emit(answer, lambda s: shown(f"created schedule {s['id']}: {_timing(s)}"))


def _one_timing(cron: str | None, interval_seconds: int | None) -> None:
    if cron is not None and interval_seconds is not None:
        raise click.UsageError("--cron and --interval-seconds: give one (a schedule has one)")


@schedules.command("delete")
@click.argument("schedule_id", type=ID)
@api_options
def delete_schedule(session: Session, schedule_id: str) -> None:
    """Delete a schedule; the runs it started carry on."""
    answer = session.api.request("DELETE", schedule_path(schedule_id))
    session.emit(answer, lambda _: shown(f"deleted schedule {schedule_id}"))


def _set_paused(session: Session, schedule_id: str, action: str) -> None:
    answer = session.api.post(f"{schedule_path(schedule_id)}/{action}")
    session.emit(
        answer, lambda s: shown(f"schedule {s['id']} {'paused' if s['paused'] else 'active'}")
    )


@schedules.command("pause")
@click.argument("schedule_id", type=ID)
@api_options
def pause_schedule(session: Session, schedule_id: str) -> None:
    """Stop firing until unpaused."""
    _set_paused(session, schedule_id, "pause")


@schedules.command("unpause")
@click.argument("schedule_id", type=ID)
@api_options
def unpause_schedule(session: Session, schedule_id: str) -> None:
    """Fire again on the schedule's timing."""
    _set_paused(session, schedule_id, "unpause")


@schedules.command("trigger")
@click.argument("schedule_id", type=ID)
@api_options
def trigger_schedule(session: Session, schedule_id: str) -> None:
    """Fire once now, as if the schedule's time had come."""
    answer = session.api.post(f"{schedule_path(schedule_id)}/trigger")
    session.emit(answer, lambda r: shown(f"schedule {r['scheduleId']}: {r['message']}"))


@schedules.command("update")
@click.argument("schedule_id", type=ID)
@timing_options
@click.option("--paused/--unpaused", "paused", default=None, cls=OnOffFlag,
              help="pause it, or let it fire again (not both)")  # fmt: skip
@api_options
def update_schedule(
    session: Session,
    schedule_id: str,
    cron: str | None,
    interval_seconds: int | None,
    time_zone: str | None,
    inputs: tuple[str, ...],
    input_json: str | None,
    overlap_policy: str | None,
    paused: bool | None,
) -> None:
    """Change a schedule: what a flag gives, the rest kept as it is.

    The API's PUT replaces the whole schedule, so this reads it and sends it back with the
    flags applied: --cron replaces an interval and --interval-seconds a cron; --input and
    --input-json replace the whole input (`--input-json '{}'` empties it). The write names
    the read's ETag: a change someone makes in between is kept and this fails (412, exit
    1); run it again to apply the flags to the schedule as it is then."""
    _one_timing(cron, interval_seconds)
    path = schedule_path(schedule_id)
    read = session.api.get(path)
    current = read.data
    body: dict[str, Any] = {
        "timeZone": current["timeZone"],
        "initialInput": current["initialInput"],
        "overlapPolicy": current["overlapPolicy"],
        "paused": current["paused"],
    }
    if cron is None and interval_seconds is None:
        timing = "cron" if current.get("cron") is not None else "intervalSeconds"
        body[timing] = current[timing]
    if cron is not None:
        body["cron"] = cron
    if interval_seconds is not None:
        body["intervalSeconds"] = interval_seconds
    given = {"timeZone": time_zone, "overlapPolicy": overlap_policy, "paused": paused}
    body.update({k: v for k, v in given.items() if v is not None})
    if inputs or input_json:
        body["initialInput"] = initial_input(inputs, input_json)
    answer = session.api.request("PUT", path, json=body, headers=if_match(read))
    session.emit(answer, lambda s: shown(f"updated schedule {s['id']}: {_timing(s)}"))


@schedules.command("skips")
@click.argument("schedule_id", type=ID)
@click.option("--after-id", type=click.IntRange(min=0), default=None, metavar="N",
              help="only skips after the one with this id")  # fmt: skip
@click.option("--limit", type=click.IntRange(1, 500), default=None, metavar="N",
              help="at most N  [API default: 100]")  # fmt: skip
@api_options
def list_skips(session: Session, schedule_id: str, after_id: int | None, limit: int | None) -> None:
    """Firings that started no run, and why (e.g. the workflow was disabled), oldest first."""
    answer = session.api.get(f"{schedule_path(schedule_id)}/skips", afterId=after_id, limit=limit)
    session.emit(answer, _skip_table)


def _skip_table(data: dict[str, Any]) -> Any:
    rows = [[s["id"], when(s["timestamp"]), s["reason"]] for s in data["skips"]]
    return table(f"skipped firings ({len(rows)})", ["ID", "AT", "REASON"], rows)
