"""The run's history budget: an estimate of its length, and when it must stop or start afresh."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows.contracts import RunInput
    from temporal_workflows.outcomes import NodeFailed

# History events an operation adds (a marker; schedule/start/complete plus a workflow task).
LOCAL_ACTIVITY_EVENTS = 1
ACTIVITY_EVENTS = 6


class HistoryBudget:
    def __init__(self, inp: RunInput) -> None:
        self._inp = inp
        # Local activities run inside one workflow task, so the server's count lags far
        # behind while they do; this estimate counts them as they are scheduled.
        self.events = 3

    def add(self, events: int) -> None:
        self.events += events

    def check(self, node_name: str) -> None:
        """Fail clearly before Temporal's hard history limits would terminate the run.

        Reached only when the run could not continue as new in time (a gate or a
        step held it past every boundary).
        """
        info = workflow.info()
        length = max(info.get_current_history_length(), self.events)
        if length > self._inp.history_event_budget:
            raise NodeFailed(
                node_name,
                f"the run's history has about {length} events, near Temporal's limit of 51,200",
            )
        size = info.get_current_history_size()
        if size > self._inp.history_byte_budget:
            raise NodeFailed(
                node_name,
                f"the run's history is {size / 1e6:.1f} MB, near Temporal's limit of 50 MB",
            )

    def should_continue_as_new(self) -> bool:
        """True once this execution's history has grown long enough to start afresh."""
        info = workflow.info()
        return (
            self.events >= self._inp.continue_as_new_after_events
            or info.is_continue_as_new_suggested()
            or info.get_current_history_size() >= self._inp.continue_as_new_after_bytes
        )
