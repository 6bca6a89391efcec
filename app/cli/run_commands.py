"""`trellis runs list | show | watch | pause | resume | cancel | retry`, `trellis approvals`
and `trellis approve`. A bare run id is enough: the API says which workflow it belongs to."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Group
from rich.text import Text

from app.cli.api_client import RESUME_PATIENCE_SECONDS, path_of, segment
from app.cli.id_argument import ID
from app.cli.limits import page_options
from app.cli.node_pages import latest_node_runs
from app.cli.option_values import initial_input, input_options, json_value, key_option, pairs
from app.cli.output import (
    STATUS_STYLE,
    Session,
    api_options,
    compact,
    page_title,
    shown,
    styled,
    table,
    when,
)
from app.cli.run_watch import watch_run
from app.cli.seconds import SECONDS
from app.cli.temporal_link import temporal_line

RUN_STATUSES = ("pending", "running", "paused", "awaiting_approval", "completed", "failed",
                "cancelled")  # fmt: skip


@click.group()
def runs() -> None:
    """Runs: list, inspect, watch live, and steer them."""


@runs.command("list")
@click.argument("workflow_id", type=ID)
@click.option("--status", type=click.Choice(RUN_STATUSES), default=None, help="only runs in it")
@click.option("--schedule", "schedule_id", default=None, metavar="SCHEDULE_ID",
              help="only the runs this schedule started")  # fmt: skip
@page_options(per_page=20)
@api_options
def list_runs(
    session: Session,
    workflow_id: str,
    status: str | None,
    schedule_id: str | None,
    page: int,
    per_page: int,
) -> None:
    """Runs of a workflow, newest first."""
    answer = session.api.get(
        f"/workflows/{segment(workflow_id)}/runs",
        status=status,
        scheduleId=schedule_id,
        page=page,
        perPage=per_page,
        nodeRuns=listed_node_runs(session),
    )
    session.emit(answer, run_table)


def listed_node_runs(session: Session) -> str:
    """The node runs a list of runs asks for: counts for a table, which shows none (a run
    of thousands of node runs made a page tens of megabytes); with --json, the API's
    whole answer, as the contract shapes it."""
    return "all" if session.as_json else "summary"


def run_table(data: dict[str, Any], title: str = "runs") -> Any:
    """A page of runs (`runs list`, `runs children`) as a table."""
    rows = [
        [r["id"], styled(r["status"]), r["triggerSource"], r["workflowVersion"],
         when(r["startedAt"]), when(r.get("finishedAt")), r.get("errorSummary")]
        for r in data["runs"]
    ]  # fmt: skip
    columns = ["RUN", "STATUS", "TRIGGER", "VERSION", "STARTED", "FINISHED", "ERROR"]
    return table(page_title(title, data["pagination"]), columns, rows)


@runs.command("start")
@click.argument("workflow_id", type=ID)
@input_options
@key_option
@api_options
def start(
    session: Session,
    workflow_id: str,
    inputs: tuple[str, ...],
    input_json: str | None,
    key: str | None,
) -> None:
    """Trigger a run of a workflow's current version (it runs asynchronously)."""
    body = {"triggerSource": "manual", "initialInput": initial_input(inputs, input_json)}
    answer = session.api.post(f"/workflows/{segment(workflow_id)}/runs", body, key)
    session.emit(answer, lambda r: shown("run ", r["runId"], " ", styled(r["status"])))


@runs.command("show")
@click.argument("run_id", type=ID)
@api_options
def show_run(session: Session, run_id: str) -> None:
    """One run: status, node runs (the latest 50 of more), pending approvals, final output."""
    if session.as_json:  # the contract's whole answer, every node run
        session.emit(session.api.get(f"/runs/{segment(run_id)}"), run_detail)
        return
    answer = session.api.get(f"/runs/{segment(run_id)}", nodeRuns="summary")
    run = {**answer.data}  # a TypeError when it is no object: not the API's answer
    counted = run["nodeRunSummary"]["total"]
    run["nodeRuns"], total = latest_node_runs(session, path_of(run), NODE_RUNS_SHOWN, counted)
    run["nodeRunSummary"] = {**run["nodeRunSummary"], "total": total}
    session.console.print(run_detail(run, temporal_line(session.api, run["id"])))


# Node runs a table shows at most: a run of thousands is counted, and its latest shown.
NODE_RUNS_SHOWN = 50


def run_detail(run: dict[str, Any], temporal: str | None = None) -> Any:
    head = shown(
        (f"run {run['id']}", "bold"),
        "  ",
        styled(run["status"]),
        f"\nworkflow {run['workflowDefinitionId']} (version {run['workflowVersion']}), "
        f"{run['triggerSource']}, started {when(run['startedAt'])}, "
        f"finished {when(run.get('finishedAt'))}",
        *(f"\n{line}" for line in _whence(run, temporal)),
    )
    parts: list[Any] = [head]
    if run.get("errorSummary"):
        parts.append(shown((f"error: {run['errorSummary']}", "red")))
    nodes = [
        [n["nodeName"], n["nodeType"], _place(n), styled(n["status"]), n["attempt"],
         when(n.get("startedAt")), when(n.get("finishedAt")), n.get("error")]
        for n in run.get("nodeRuns") or []
    ]  # fmt: skip
    columns = ["NODE", "TYPE", "IN", "STATUS", "ATTEMPT", "STARTED", "FINISHED", "ERROR"]
    parts.append(table(_node_runs_title(run, len(nodes)), columns, nodes))
    pending = run.get("pendingRequirements") or []
    if pending:
        parts.append(approval_rows(run["id"], pending))
    if run.get("finalOutput") is not None:
        parts.append(Text(f"output: {compact(run['finalOutput'], 2000)}"))
    return Group(*parts)


def _whence(run: dict[str, Any], temporal: str | None) -> list[str]:
    """Where the run comes from and where Temporal has it, as the console's run page says:
    its parent (a retry, rerun or replay), the schedule that started it, the Temporal link."""
    lines = []
    if run.get("parentRunId"):
        lines.append(f"parent run: {run['parentRunId']}")
    if run.get("scheduleId"):
        lines.append(f"schedule: {run['scheduleId']}")
    return [*lines, *([temporal] if temporal else [])]


def _place(node_run: dict[str, Any]) -> str:
    """Which map item or loop iteration a node run is of (0-based, as the API counts)."""
    if node_run.get("itemIndex") is not None:
        return f"item {node_run['itemIndex']}"
    if node_run.get("iteration") is not None:
        return f"iteration {node_run['iteration']}"
    return ""


def _node_runs_title(run: dict[str, Any], shown_count: int) -> str:
    """ "node runs", or how many there are by status and which of them are shown."""
    summary = run.get("nodeRunSummary")
    if not summary or summary["total"] <= shown_count:
        return "node runs"
    counts = ", ".join(f"{n:,} {status}" for status, n in sorted(summary["byStatus"].items()))
    return (
        f"node runs: {summary['total']:,} ({counts}); the latest {shown_count} shown,"
        " --json has every one"
    )


def approval_rows(run_id: str, pending: list[dict[str, Any]]) -> Any:
    rows = [
        [r.get("stepId"), r.get("stepName"), _needs(r), _asked(_message(r), r)] for r in pending
    ]
    hint = shown(
        (f"decide with: trellis approve {run_id} STEP_ID [{' | '.join(_decisions(pending))}]",
         "magenta")
    )  # fmt: skip
    return Group(table("waiting for approval", ["STEP_ID", "STEP", "NEEDS", "MESSAGE"], rows), hint)


def _decisions(pending: list[dict[str, Any]]) -> list[str]:
    """The decisions the waiting gates take besides confirming: the API refuses the others
    (an --input at a confirmation, an --edited-output before the step ran)."""
    decisions = ["--reject"]
    if any(r.get("requiresUserInput") for r in pending):
        decisions.append("--input NAME=VALUE …")
    if any(r.get("requiresRouteSelection") for r in pending):
        decisions.append("--choice NAME …")
    if any(r.get("requiresOutputReview") and r.get("isPostExecution") for r in pending):
        decisions.append("--edited-output JSON")
    return decisions


def _asked(message: str | None, requirement: dict[str, Any]) -> str:
    """The gate's message, and the output it asks a person to review (an output review,
    a loop's iteration), compact and cut short: `runs show --json` has all of it."""
    asked = message or "-"
    if requirement.get("isPostExecution") and "stepOutput" in requirement:
        asked += f"\noutput: {compact(requirement['stepOutput'], OUTPUT_SHOWN)}"
    return asked


# Characters of a reviewed output a table shows: enough to recognise it, not a screenful.
OUTPUT_SHOWN = 300


def _message(requirement: dict[str, Any]) -> str | None:
    found = [v for k, v in requirement.items() if k.lower().endswith("message") and v]
    return str(found[0]) if found else None


def _needs(requirement: dict[str, Any]) -> str:
    """What the gate asks, with what an approver types: the form's fields (`*` must be
    given: required, no default) and the routes to choose from, which the decision names."""
    needs = ", ".join(_gate_words(requirement)) or "confirmation"
    if requirement.get("kind") == ITERATION_REVIEW:
        needs += "\nconfirm: continue the loop; --reject: end it"
    fields = [_form_field(f) for f in requirement.get("userInputSchema") or []]
    if fields:
        needs += f"\n--input: {', '.join(fields)}"
    choices = [str(c) for c in requirement.get("availableChoices") or []]
    if choices:
        many = " (one or more)" if requirement.get("allowMultipleSelections") else ""
        suggested = requirement.get("suggestedChoices")
        hint = f"; suggested {', '.join(map(str, suggested))}" if suggested else ""
        needs += f"\n--choice{many}: {', '.join(choices)}{hint}"
    return needs


def _form_field(field: dict[str, Any]) -> str:
    default = field.get("value")
    must = "*" if field.get("required") and default is None else ""
    kind = str(field.get("fieldType"))
    allowed = field.get("allowedValues")
    if allowed:
        # The only values the API takes: without them an approver learnt them from a 400.
        kind += f", one of {' | '.join(json.dumps(v) for v in allowed)}"
    if default is not None:
        kind += f", default {json.dumps(default)}"
    return f"{field.get('name')}{must} ({kind})"


@runs.command("watch")
@click.argument("run_id", type=ID)
@click.option(
    "--patience",
    type=SECONDS,
    default=RESUME_PATIENCE_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="how long to wait while no API answers (a restart, a deploy) before exit 3",
)
@api_options
def watch(session: Session, run_id: str, patience: float) -> int:
    """Follow a run live (its event stream) until it ends.

    Exit code 0: the run completed; 1: it failed or was cancelled; 3: the watch could not
    follow it (unknown id, API refusing, or none answering for --patience seconds); 141:
    whoever read its output went away (`| head`), the run's outcome unknown."""
    return watch_run(session, run_id, patience)


def _control(session: Session, run_id: str, action: str, key: str | None = None) -> None:
    answer = session.api.post(f"{session.api.run_path(run_id)}/{action}", key=key)
    session.emit(
        answer,
        lambda r: shown(f"run {r['runId']}: {r['message']} (now ", styled(r["status"]), ")"),
    )


@runs.command("pause")
@click.argument("run_id", type=ID)
@key_option
@api_options
def pause(session: Session, run_id: str, key: str | None) -> None:
    """Pause at the next node boundary (steps in flight finish)."""
    _control(session, run_id, "pause", key)


@runs.command("resume")
@click.argument("run_id", type=ID)
@key_option
@api_options
def resume(session: Session, run_id: str, key: str | None) -> None:
    """Continue a paused run."""
    _control(session, run_id, "resume", key)


@runs.command("cancel")
@click.argument("run_id", type=ID)
@api_options
def cancel(session: Session, run_id: str) -> None:
    """Cancel a run (steps in flight are cancelled)."""
    _control(session, run_id, "cancel")


@runs.command("retry")
@click.argument("run_id", type=ID)
@key_option
@api_options
def retry(session: Session, run_id: str, key: str | None) -> None:
    """Start a new run of a finished one, reusing what completed (a child run)."""
    answer = session.api.post(f"{session.api.run_path(run_id)}/retry", key=key)
    session.emit(answer, lambda r: started("retry", r["runId"], r["status"], r["parentRunId"]))


def started(what: str, child_id: str, status: str, parent_id: str) -> Any:
    """The line of a child run started (retry, rerun, replay): the next thing one does is
    watch it."""
    return shown(
        f"{what} started: run {child_id} (",
        styled(status),
        f"), a child of run {parent_id}",
        (f"\nfollow it with: trellis runs watch {child_id}", "magenta"),
    )


@click.command()
@page_options(per_page=50)
@api_options
def approvals(session: Session, page: int, per_page: int) -> None:
    """The approvals inbox: every gate waiting for a person, oldest first."""
    session.emit(session.api.get("/approvals", page=page, perPage=per_page), _inbox)


def _inbox(data: dict[str, Any]) -> Any:
    rows = [
        [_run_cell(a), a["stepId"], a.get("stepName"), a["workflowName"],
         _asks(a.get("requirement") or {}, a.get("kind")), ", ".join(a.get("approvers") or [])
         or "not restricted", _age(a.get("ageSeconds")),
         _asked(a.get("message"), a.get("requirement") or {})]
        for a in data["approvals"]
    ]  # fmt: skip
    columns = ["RUN", "STEP_ID", "STEP", "WORKFLOW", "ASKS", "WHO", "WAITING", "MESSAGE"]
    return table(page_title("approvals", data["pagination"]), columns, rows)


def _run_cell(approval: dict[str, Any]) -> Any:
    """The gate's run, and "run paused" when it is (as the console's inbox says): a
    decision is taken now and applied only once the run is resumed."""
    if approval.get("runStatus") != "paused":
        return approval["runId"]
    return shown(approval["runId"], "\n", ("run paused", STATUS_STYLE["paused"]))


def _asks(requirement: dict[str, Any], kind: str | None) -> str:
    """What a gate asks, as its requirement's flags name it ("Confirmation", "UserInput"),
    where its `kind` says only when ("before" a step or after it)."""
    return ", ".join(_gate_words({"kind": kind, **requirement})) or str(kind or "-")


# A loop's review between iterations: its requirement sets `requiresConfirmation`, and the
# CLI called it a confirmation. The console names it so (gate.js `gateKind`).
ITERATION_REVIEW = "iteration_review"


def _gate_words(requirement: dict[str, Any]) -> list[str]:
    """What a gate asks, in words: its flags, an iteration review named as one."""
    flags = _flags(requirement)
    if requirement.get("kind") == ITERATION_REVIEW:
        return ["Iteration review", *(f for f in flags if f != "Confirmation")]
    return flags


def _flags(requirement: dict[str, Any]) -> list[str]:
    """The requirement's `requires*` flags that are set, named without the prefix."""
    return [k.removeprefix("requires") for k, v in requirement.items()
            if k.startswith("requires") and v is True]  # fmt: skip


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


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
@click.argument("run_id", type=ID)
@click.argument("step_id", type=ID)
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
@key_option
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
    key: str | None,
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
    if feedback is not None and not reject:
        # The API records feedback only with a rejection: any other decision drops it.
        raise click.UsageError("--feedback goes with --reject: only a rejection records it")
    body: dict[str, Any] = {"stepId": step_id, "resolution": "confirm"}
    if edited_output is not None:
        # JSON only: a typo must not become the step's output (the decision is final).
        body.update(resolution="edit", editedOutput=json_value(edited_output, "--edited-output"))
    if choices:
        body.update(resolution="route_select", selectedChoices=list(choices))
    # Its path and its open gates: not its node runs (a long loop's could be too large).
    run = session.api.get(f"/runs/{segment(run_id)}", nodeRuns="summary").data
    if inputs:
        text = _text_fields(run, step_id)
        body.update(resolution="user_input", userInput=pairs(inputs, "--input", text))
    if reject:
        body["resolution"] = "reject"
    if feedback is not None:
        body["feedback"] = feedback
    if (gate := _gate_read(run, step_id)) is not None:
        body["gate"] = gate
    answer = session.api.post(f"{path_of(run)}/approve", body, key)
    session.emit(
        answer, lambda r: shown(f"run {r['runId']}: {r['message']} (", styled(r["status"]), ")")
    )


def _gate_read(run: dict[str, Any], step_id: str) -> dict[str, Any] | None:
    """The opening of the step's gate the run showed (`gate`): the decision is for that one,
    409 once another opened (a loop's next iteration, the output review after a confirm),
    not for one opened after it was read. None unless one entry is open (the API says
    which gate it cannot find), or for a gate recorded before gates named their node run."""
    shown = [r for r in run.get("pendingRequirements") or [] if r.get("stepId") == step_id]
    if len(shown) != 1 or not isinstance(shown[0].get("nodeRunId"), str):
        return None
    return {name: shown[0].get(name) for name in ("nodeRunId", "iteration", "itemIndex", "kind")}


COMMANDS = (runs, approvals, approve)
