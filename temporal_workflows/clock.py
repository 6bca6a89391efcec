"""The run's clock: workflow time, kept in causal order with the times its steps report."""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def fixed_width(moment: datetime) -> str:
    """A UTC time as the store keeps times: microseconds always shown, so text order is
    time order. Not strftime: in the sandbox that imports `time` through the sandbox's
    importer on every call (~2 % of the worker's CPU on built-in steps)."""
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


class RunClock:
    def __init__(self) -> None:
        # The latest time stamped or observed (None before the first).
        self.latest: datetime | None = None

    def now(self) -> str:
        """Workflow time (the workflow task's start), ISO 8601 in UTC."""
        return iso(workflow.now())

    def stamp(self) -> str:
        """A timestamp for a record the workflow writes, never before one already seen.

        workflow.now() is the workflow task's start; steps run (as activities) after
        it, so a container recorded after a step would sort before it. Taking the later
        of the two, plus a microsecond, keeps every record in causal order.
        """
        now = workflow.now()
        if self.latest is not None and now <= self.latest:
            now = self.latest + timedelta(microseconds=1)
        self.latest = now
        return fixed_width(now)

    def event_time(self) -> str:
        """An event's timestamp: workflow time, but never before a time already stamped or
        seen, so a run's events are not dated before the records they follow (a run that
        ends in the task of its last inline step). It is not a stamp: it moves nothing, so
        the outbox's timing, and with it the workflow's commands, stay as they were."""
        now = workflow.now()
        if self.latest is not None and now < self.latest:
            now = self.latest
        return fixed_width(now)

    def observe(self, timestamp: str | None) -> None:
        """Note a time a step reported (recorded in history, so replay sees the same)."""
        if timestamp:
            seen = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
            if self.latest is None or seen > self.latest:
                self.latest = seen
