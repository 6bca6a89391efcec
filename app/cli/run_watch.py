"""`trellis runs watch`: a run's event stream as a live view of its node runs (a terminal),
a line per event (piped), or the events' JSON (--json)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import click
from rich.console import Group
from rich.live import Live

from app.cli.api_client import RESUME_PATIENCE_SECONDS, ApiError, SseEvent, path_of, segment
from app.cli.node_pages import latest_node_runs
from app.cli.output import Session, clean, shown, styled, table, when

# Exit codes: 0 the run completed, 1 it failed or was cancelled, 2 a usage error (click's),
# WATCH_FAILED the watch could not follow the run (so a script can tell the run's failure
# from its own: an unknown id, an API refusing or not answering, a stream lost for good);
# 141 when its output's reader went away (reader_gone.py).
WATCH_FAILED = 3
# A live view draws its node runs' latest this many (a run of thousands made each redraw
# a table of thousands, on every event: the view fell minutes behind). It is drawn by
# rich's own refresh, 8 times a second, not once per event.
ROWS_SHOWN = 30


class WatchFailed(click.ClickException):
    """The watch itself failed; the run's outcome is unknown."""

    exit_code = WATCH_FAILED


@dataclass
class RunView:
    """What the watcher knows: the run's status and each node run's latest state."""

    run_id: str
    status: str
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)  # step id -> step name
    # rich's refresh thread draws the view while events change it.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def of(cls, run: dict[str, Any]) -> RunView:
        view = cls(run["id"], run["status"])
        for node in run.get("nodeRuns") or []:
            view.nodes[node["id"]] = node
        for requirement in run.get("pendingRequirements") or []:
            view.waiting[str(requirement.get("stepId"))] = str(requirement.get("stepName") or "")
        return view

    def apply(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._apply(event)

    def _apply(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", ""))
        node_run_id = event.get("nodeRunId")
        # Every event about the run itself carries the run's status, not only `run_*` ones:
        # `awaiting_approval` and `requirement_resolved` are the run's too.
        if not node_run_id and event.get("status"):
            self.status = str(event["status"])
        if node_run_id:
            node = self.nodes.setdefault(
                str(node_run_id),
                {"nodeName": event.get("nodeName"), "nodeId": event.get("nodeId"), "attempt": 1},
            )
            node["status"] = event.get("status") or node.get("status")
            node["attempt"] = event.get("attempt") or node.get("attempt")
            stamp = event.get("timestamp")
            if kind == "node_started":
                node.setdefault("startedAt", stamp)
            elif kind in ("node_completed", "node_failed", "node_cancelled", "node_skipped"):
                node["finishedAt"] = stamp
                node["error"] = event.get("error") or node.get("error")
            if kind == "node_awaiting_approval":
                self.waiting[str(event.get("nodeId"))] = str(event.get("nodeName") or "")
        if kind == "requirement_resolved":
            self.waiting.pop(str(event.get("stepId") or event.get("nodeId")), None)

    def update(self, node_runs: list[dict[str, Any]]) -> None:
        """Take these node runs as the record has them (errors, attempts: events lack them)."""
        with self._lock:
            for node in node_runs:
                self.nodes.setdefault(node["id"], {}).update(node)

    def render(self) -> Any:
        with self._lock:
            return self._render()

    def _render(self) -> Any:
        done = sum(1 for n in self.nodes.values() if n.get("status") in _ENDED)
        head = shown(
            (f"run {self.run_id}", "bold"),
            "  ",
            styled(self.status),
            f"  {done}/{len(self.nodes)} node runs ended",
        )
        latest = list(self.nodes.values())[-ROWS_SHOWN:]
        rows = [
            [n.get("nodeName"), styled(n.get("status")), n.get("attempt"),
             when(n.get("startedAt")), when(n.get("finishedAt")), n.get("error")]
            for n in latest
        ]  # fmt: skip
        columns = ["NODE", "STATUS", "ATTEMPT", "STARTED", "FINISHED", "ERROR"]
        earlier = len(self.nodes) - len(latest)
        title = f"the latest {len(latest)} node runs ({earlier:,} before them)" if earlier else None
        parts: list[Any] = [head, table(title, columns, rows)]
        for step_id, name in self.waiting.items():
            parts.append(
                shown(
                    (f"waiting at {name or step_id}", "magenta"),
                    f": trellis approve {self.run_id} {step_id}",
                )
            )
        return Group(*parts)


_ENDED = {"completed", "failed", "cancelled", "skipped"}


# How much of a failed attempt's error a retry's line repeats (the node run has it whole).
ATTEMPT_ERROR_CHARS = 160


def _line(event: dict[str, Any]) -> str:
    """One event as one line, for a log or a pipe."""
    what = event.get("nodeName") or ""
    extra = f" ({event['error']})" if event.get("error") else ""
    attempt = event.get("attempt")
    if event.get("type") == "node_started" and isinstance(attempt, int) and attempt > 1:
        # A retry: else each attempt read as the same bare start again.
        extra = f" (attempt {attempt})"
        if before := event.get("previousError"):
            before = str(before)
            if len(before) > ATTEMPT_ERROR_CHARS:
                before = before[:ATTEMPT_ERROR_CHARS] + "…"
            extra = f" (attempt {attempt}; attempt {attempt - 1} failed: {before})"
    kind, status = event.get("type", ""), event.get("status", "")
    line = f"{when(event.get('timestamp'))}  {kind:<24} {what} {status}{extra}".rstrip()
    return clean(line, one_line=True)


def watch_run(session: Session, run_id: str, patience: float = RESUME_PATIENCE_SECONDS) -> int:
    """Follow the run until it ends; 0 when it completed, 1 when it failed or was cancelled;
    WatchFailed when it cannot be followed (or no API answers for `patience` seconds)."""
    try:
        with session.api.read_as_answered():
            return _Watch(session, patience).follow(run_id)
    except ApiError as exc:
        raise WatchFailed(clean(exc, one_line=True)) from None


@dataclass
class _Watch:
    session: Session
    patience: float

    def _run(self, run_id: str) -> dict[str, Any]:
        # Started during a restart or a deploy: wait for the API, as the stream does later.
        answer = self.session.api.get_when_up(
            f"/runs/{segment(run_id)}?nodeRuns=summary",
            patience=self.patience,
            waiting=_say_waiting,
        )
        return answer.data  # type: ignore[no-any-return]

    def follow(self, run_id: str) -> int:
        session = self.session
        # Counted, not listed: the stream's events from the first build every node run,
        # in order (listed first, a replayed `node_started` made a finished one running).
        run = self._run(run_id)
        path = path_of(run)
        view = RunView.of(run)
        events = session.api.events(path, patience=self.patience)
        if session.as_json:
            for raw in events:
                click.echo(raw.data)
                view.apply(raw.json)
            if view.status not in ("completed", "failed", "cancelled"):
                view.status = self._run(run_id)["status"]
            return 0 if view.status == "completed" else 1
        if session.console.is_terminal:
            # Drawn afresh at each of rich's refreshes: what came last shows within 1/8 s.
            with Live(console=session.console, refresh_per_second=8,
                      get_renderable=lambda: view.render()) as live:  # fmt: skip
                for raw in events:
                    view.apply(_event(raw))
                # Node events carry no error or attempt: the run's record has both, for the
                # node runs the view shows.
                run = self._run(run_id)
                view.status = str(run["status"])
                total = run["nodeRunSummary"]["total"]
                view.update(latest_node_runs(session, path, ROWS_SHOWN, total)[0])
                live.refresh()
        else:
            for raw in events:
                event = _event(raw)
                view.apply(event)
                session.console.print(_line(event), markup=False)
            run = self._run(run_id)
        status = str(run["status"])
        failed = status != "completed" and run.get("errorSummary")
        why = f": {run['errorSummary']}" if failed else ""
        session.console.print(shown(f"run {run_id} ", styled(status), why))
        return 0 if status == "completed" else 1


def _say_waiting(message: str) -> None:
    click.echo(message, err=True)


def _event(raw: SseEvent) -> dict[str, Any]:
    return raw.json
