"""`trellis runs list | show | watch | pause | resume | cancel | retry`, `trellis approvals`
and `trellis approve`. A bare run id is enough: the API says which workflow it belongs to."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Group
from rich.text import Text

from app.cli.api_client import RESUME_PATIENCE_SECONDS, path_of, segment
from app.cli.output import Session, api_options, compact, shown, styled, table, when
from app.cli.run_watch import watch_run

RUN_STATUSES = ("pending", "running", "paused", "awaiting_approval", "completed", "failed",
                "cancelled")  # fmt: skip


@click.group()
def runs() -> None:
    """Runs: list, inspect, watch live, and steer them."""


@runs.command("list")
@click.argument("workflow_id")
@click.option("--status", type=click.Choice(RUN_STATUSES), default=None, help="only runs in it")
@click.option("--page", type=int, default=1, show_default=True)
@click.option("--per-page", type=int, default=20, show_default=True)
@api_options
def list_runs(
    session: Session, workflow_id: str, status: str | None, page: int, per_page: int
) -> None:
    """Runs of a workflow, newest first."""
    answer = session.api.get(
        f"/workflows/{segment(workflow_id)}/runs", status=status, page=page, perPage=per_page
    )
    session.emit(answer, run_table)


def run_table(data: dict[str, Any], title: str = "runs") -> Any:
    """A page of runs (`runs list`, `runs children`) as a table."""
    rows = [
        [r["id"], styled(r["status"]), r["triggerSource"], r["workflowVersion"],
         when(r["startedAt"]), when(r.get("finishedAt")), r.get("errorSummary")]
        for r in data["runs"]
    ]  # fmt: skip
    pages = data["pagination"]
    title += f" ({pages['total']}; page {pages['page']} of {max(pages['totalPages'], 1)})"
    columns = ["RUN", "STATUS", "TRIGGER", "VERSION", "STARTED", "FINISHED", "ERROR"]
    return table(title, columns, rows)


def input_options(func: Any) -> Any:
    """`--input KEY=VALUE …` and `--input-json JSON|@FILE|-`: a run's initial input."""
    func = click.option(
        "--input-json",
        default=None,
        metavar="JSON|@FILE|-",
        help="the whole initial input: JSON, @FILE to read it from a file, - from stdin",
    )(func)
    return click.option(
        "--input",
        "inputs",
        multiple=True,
        metavar="KEY=VALUE",
        help="the run's initial input (repeatable; JSON values allowed)",
    )(func)


def initial_input(inputs: tuple[str, ...], input_json: str | None) -> dict[str, Any]:
    """The initial input of `input_options`: `--input-json`'s object, `--input` pairs added."""
    initial = _json_object(input_json, "--input-json") if input_json else {}
    initial.update(_pairs(inputs, "--input"))
    return initial


@runs.command("start")
@click.argument("workflow_id")
@input_options
@api_options
def start(
    session: Session, workflow_id: str, inputs: tuple[str, ...], input_json: str | None
) -> None:
    """Trigger a run of a workflow's current version (it runs asynchronously)."""
    body = {"triggerSource": "manual", "initialInput": initial_input(inputs, input_json)}
    answer = session.api.post(f"/workflows/{segment(workflow_id)}/runs", body)
    session.emit(answer, lambda r: shown("run ", r["runId"], " ", styled(r["status"])))


@runs.command("show")
@click.argument("run_id")
@api_options
def show_run(session: Session, run_id: str) -> None:
    """One run: status, node runs, pending approvals, final output."""
    session.emit(session.api.get(f"/runs/{segment(run_id)}"), run_detail)


def run_detail(run: dict[str, Any]) -> Any:
    head = shown(
        (f"run {run['id']}", "bold"),
        "  ",
        styled(run["status"]),
        f"\nworkflow {run['workflowDefinitionId']} (version {run['workflowVersion']}), "
        f"{run['triggerSource']}, started {when(run['startedAt'])}, "
        f"finished {when(run.get('finishedAt'))}",
    )
    parts: list[Any] = [head]
    if run.get("errorSummary"):
        parts.append(shown((f"error: {run['errorSummary']}", "red")))
    nodes = [
        [n["nodeName"], n["nodeType"], styled(n["status"]), n["attempt"],
         when(n.get("startedAt")), when(n.get("finishedAt")), n.get("error")]
        for n in run.get("nodeRuns") or []
    ]  # fmt: skip
    columns = ["NODE", "TYPE", "STATUS", "ATTEMPT", "STARTED", "FINISHED", "ERROR"]
    parts.append(table("node runs", columns, nodes))
    pending = run.get("pendingRequirements") or []
    if pending:
        parts.append(approval_rows(run["id"], pending))
    if run.get("finalOutput") is not None:
        parts.append(Text(f"output: {compact(run['finalOutput'], 2000)}"))
    return Group(*parts)


def approval_rows(run_id: str, pending: list[dict[str, Any]]) -> Any:
    rows = [[r.get("stepId"), r.get("stepName"), _needs(r), _message(r)] for r in pending]
    hint = shown(
        (f"decide with: trellis approve {run_id} STEP_ID [--reject | --input NAME=VALUE … | "
         "--choice NAME … | --edited-output JSON]", "magenta")
    )  # fmt: skip
    return Group(table("waiting for approval", ["STEP_ID", "STEP", "NEEDS", "MESSAGE"], rows), hint)


def _message(requirement: dict[str, Any]) -> str:
    found = [v for k, v in requirement.items() if k.lower().endswith("message") and v]
    return str(found[0]) if found else "-"


def _needs(requirement: dict[str, Any]) -> str:
    """What the gate asks, with what an approver types: the form's fields (`*` required)
    and the routes to choose from, which the decision names."""
    flags = [k.removeprefix("requires") for k, v in requirement.items()
             if k.startswith("requires") and v is True]  # fmt: skip
    needs = ", ".join(flags) or "confirmation"
    fields = [f"{f.get('name')}{'*' if f.get('required') else ''} ({f.get('fieldType')})"
              for f in requirement.get("userInputSchema") or []]  # fmt: skip
    if fields:
        needs += f"\n--input: {', '.join(fields)}"
    choices = [str(c) for c in requirement.get("availableChoices") or []]
    if choices:
        many = " (one or more)" if requirement.get("allowMultipleSelections") else ""
        suggested = requirement.get("suggestedChoices")
        hint = f"; suggested {', '.join(map(str, suggested))}" if suggested else ""
        needs += f"\n--choice{many}: {', '.join(choices)}{hint}"
    return needs


@runs.command("watch")
@click.argument("run_id")
@click.option(
    "--patience",
    type=click.FloatRange(min=0),
    default=RESUME_PATIENCE_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="how long to wait while no API answers (a restart, a deploy) before exit 3",
)
@api_options
def watch(session: Session, run_id: str, patience: float) -> int:
    """Follow a run live (its event stream) until it ends.

    Exit code 0: the run completed; 1: it failed or was cancelled; 3: the watch could not
    follow it (unknown id, API refusing, or none answering for --patience seconds)."""
    return watch_run(session, run_id, patience)


def _control(session: Session, run_id: str, action: str) -> None:
    answer = session.api.post(f"{session.api.run_path(run_id)}/{action}")
    session.emit(
        answer,
        lambda r: shown(f"run {r['runId']}: {r['message']} (now ", styled(r["status"]), ")"),
    )


@runs.command("pause")
@click.argument("run_id")
@api_options
def pause(session: Session, run_id: str) -> None:
    """Pause at the next node boundary (steps in flight finish)."""
    _control(session, run_id, "pause")


@runs.command("resume")
@click.argument("run_id")
@api_options
def resume(session: Session, run_id: str) -> None:
    """Continue a paused run."""
    _control(session, run_id, "resume")


@runs.command("cancel")
@click.argument("run_id")
@api_options
def cancel(session: Session, run_id: str) -> None:
    """Cancel a run (steps in flight are cancelled)."""
    _control(session, run_id, "cancel")


@runs.command("retry")
@click.argument("run_id")
@api_options
def retry(session: Session, run_id: str) -> None:
    """Start a new run of a finished one, reusing what completed (a child run)."""
    answer = session.api.post(f"{session.api.run_path(run_id)}/retry")
    session.emit(answer, lambda r: shown(f"retry started: run {r.get('runId') or r.get('id')}"))


@click.command()
@click.option("--page", type=int, default=1, show_default=True)
@click.option("--per-page", type=int, default=50, show_default=True)
@api_options
def approvals(session: Session, page: int, per_page: int) -> None:
    """The approvals inbox: every gate waiting for a person, oldest first."""
    session.emit(session.api.get("/approvals", page=page, perPage=per_page), _inbox)


def _inbox(data: dict[str, Any]) -> Any:
    rows = [
        [a["runId"], a["stepId"], a.get("stepName"), a["workflowName"], a.get("kind"),
         _age(a.get("ageSeconds")), a.get("message")]
        for a in data["approvals"]
    ]  # fmt: skip
    columns = ["RUN", "STEP_ID", "STEP", "WORKFLOW", "KIND", "WAITING", "MESSAGE"]
    return table(f"approvals ({data['pagination']['total']})", columns, rows)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _value(text: str) -> Any:
    """`--input` values: JSON when they parse (numbers, true, lists), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _json(text: str, option: str) -> Any:
    """A value that must be JSON, given inline, as `@FILE` or as `-` (stdin): an input
    larger than a command line may carry (128 KiB an argument on Linux) comes from a file
    or a pipe. JSON never starts with `@`, and `-` alone is not JSON. Anything else is a
    one-line usage error."""
    if text == "-" or text.startswith("@"):
        text = _read_text(text, option)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON ({exc})", param_hint=option) from None


def _read_text(source: str, option: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source[1:]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise click.BadParameter(f"cannot read {source[1:]!r}: {why}", param_hint=option) from None


def _json_object(text: str, option: str) -> dict[str, Any]:
    value = _json(text, option)
    if not isinstance(value, dict):
        raise click.BadParameter("a JSON object ({...}) is needed", param_hint=option)
    return value


def _pairs(
    items: tuple[str, ...], option: str, text_keys: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """KEY=VALUE pairs; the values of `text_keys` stay text even when they parse as JSON."""
    pairs = [item.partition("=") for item in items]
    if any(not sep or not key for key, sep, _ in pairs):
        raise click.BadParameter("use KEY=VALUE", param_hint=option)
    return {key: value if key in text_keys else _value(value) for key, _, value in pairs}


def _text_fields(run: dict[str, Any], step_id: str) -> frozenset[str]:
    """The string fields of the step's open form: `zip=02139` or `code=123` is text there."""
    return frozenset(
        field["name"]
        for req in run.get("pendingRequirements") or []
        if req.get("stepId") == step_id
        for field in req.get("userInputSchema") or []
        if field.get("fieldType") == "str"
    )


@click.command(short_help="Decide a gate: confirm, --reject, --input, --choice, --edited-output.")
@click.argument("run_id")
@click.argument("step_id")
@click.option("--reject", is_flag=True, help="reject instead of confirming")
@click.option("--feedback", default=None,
              help="why, with --reject (recorded as the rejection's feedback)")  # fmt: skip
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE",
              help="answer a user-input gate (repeatable; JSON values allowed, "
                   "but a text field takes the value as written)")  # fmt: skip
@click.option("--choice", "choices", multiple=True, help="route(s) to select at a router gate")
@click.option(
    "--edited-output",
    default=None,
    metavar="JSON|@FILE|-",
    help="replace the step's output (JSON, @FILE or - for stdin)",
)
@api_options
def approve(
    session: Session,
    run_id: str,
    step_id: str,
    reject: bool,
    feedback: str | None,
    inputs: tuple[str, ...],
    choices: tuple[str, ...],
    edited_output: str | None,
) -> None:
    """Decide a gate: confirm (default), --reject, --input k=v, --choice, --edited-output."""
    given = {
        "--reject": reject,
        "--input": bool(inputs),
        "--choice": bool(choices),
        "--edited-output": edited_output is not None,
    }
    if sum(given.values()) > 1:
        # Each makes another decision; one of them would silently win.
        chosen = " and ".join(flag for flag, on in given.items() if on)
        raise click.UsageError(f"{chosen} are different decisions: give one")
    run = session.api.get(f"/runs/{segment(run_id)}").data
    body: dict[str, Any] = {"stepId": step_id, "resolution": "confirm"}
    if inputs:
        text = _text_fields(run, step_id)
        body.update(resolution="user_input", userInput=_pairs(inputs, "--input", text))
    if choices:
        body.update(resolution="route_select", selectedChoices=list(choices))
    if edited_output is not None:
        # JSON only: a typo must not become the step's output (the decision is final).
        body.update(resolution="edit", editedOutput=_json(edited_output, "--edited-output"))
    if reject:
        body["resolution"] = "reject"
    if feedback is not None:
        body["feedback"] = feedback
    answer = session.api.post(f"{path_of(run)}/approve", body)
    session.emit(
        answer, lambda r: shown(f"run {r['runId']}: {r['message']} (", styled(r["status"]), ")")
    )


COMMANDS = (runs, approvals, approve)
