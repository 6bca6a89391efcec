"""`trellis runs rerun | replay | children`: runs that beget runs (a child run linked to
its parent by `parentRunId`). A bare run id is enough, as for the other run commands."""

from __future__ import annotations

import click

from app.cli.api_client import path_of, segment
from app.cli.id_argument import ID
from app.cli.limits import page_options
from app.cli.option_values import key_option
from app.cli.output import Session, api_options
from app.cli.run_commands import listed_node_runs, run_table, started
from app.cli.step_names import node_id_of


@click.command("rerun")
@click.argument("run_id", type=ID)
@click.argument("node_id", type=ID)
@key_option
@api_options
def rerun(session: Session, run_id: str, node_id: str, key: str | None) -> None:
    """Rerun one top-level step of a finished run (a child run).

    The steps before it reuse their outputs, the ones after it do not run. NODE_ID is the
    step's id in the definition (`trellis workflows show`), or its name when no other
    top-level step has that name (a nested step's name is answered as its id is)."""
    # The run's definition snapshot (not its node runs): the ids and names it ran with.
    run = session.api.get(f"/runs/{segment(run_id)}", nodeRuns="summary").data
    node_id = node_id_of(run.get("definitionSnapshot") or {}, node_id)
    answer = session.api.post(f"{path_of(run)}/nodes/{segment(node_id)}/rerun", key=key)
    # Contract 13's body is snake_case (`run_id`), unlike the other control answers.
    session.emit(answer, lambda r: started("rerun", r["run_id"], r["status"], run_id))


@click.command("replay")
@click.argument("run_id", type=ID)
@key_option
@api_options
def replay(session: Session, run_id: str, key: str | None) -> None:
    """Run the live definition again from scratch (a child run).

    Every step runs anew, on the run's initial input."""
    answer = session.api.post(f"{session.api.run_path(run_id)}/replay", key=key)
    session.emit(answer, lambda r: started("replay", r["runId"], r["status"], r["parentRunId"]))


@click.command("children")
@click.argument("run_id", type=ID)
@page_options(per_page=20)
@api_options
def children(session: Session, run_id: str, page: int, per_page: int) -> None:
    """Runs started from this one (retry, rerun, replay), newest first."""
    answer = session.api.get(
        f"{session.api.run_path(run_id)}/children",
        page=page,
        perPage=per_page,
        nodeRuns=listed_node_runs(session),
    )
    session.emit(answer, lambda data: run_table(data, f"children of run {run_id}"))


COMMANDS = (rerun, replay, children)
