"""The data a node sees: the run's input and what earlier steps produced.

The same variables serve CEL expressions and `{{ … }}` templates (docs/semantics.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from temporal_workflows.frames import ScopeState
from temporal_workflows.placement import Placement


@dataclass
class Scope:
    input: dict[str, Any]
    additional_data: dict[str, Any]
    # Values steps saved with `config.saveAs`; shared by every branch of a run.
    session_state: dict[str, Any]
    previous_step_content: Any = None
    previous_step_outputs: dict[str, Any] = field(default_factory=dict)
    # Node-specific extras: step_choices, user_input, rejection_feedback, iteration, ...
    extra: dict[str, Any] = field(default_factory=dict)
    # The container node run (and item or iteration) whose children run in this scope;
    # derived again from frames on resume, so not carried across continue-as-new.
    placement: Placement | None = None
    # The names this scope set since its fork, in order (a dict: ordered, unlike a set):
    # what a parallel takes back from its branch, not the branch's copy of the rest.
    written: dict[str, None] = field(default_factory=dict)

    def variables(self) -> dict[str, Any]:
        """Every variable by name, for CEL and templates."""
        return {
            "input": self.input,
            "previous_step_content": self.previous_step_content,
            "previous_step_outputs": self.previous_step_outputs,
            "additional_data": self.additional_data,
            "session_state": self.session_state,
            **self.extra,
        }

    def context(self) -> dict[str, Any]:
        """The run context handed to executors: the same variables CEL sees."""
        return self.variables()

    def fork(self) -> Scope:
        """A copy for a parallel branch: it sees what came before, not its siblings."""
        return Scope(
            input=self.input,
            additional_data=self.additional_data,
            session_state=self.session_state,
            previous_step_content=self.previous_step_content,
            previous_step_outputs=dict(self.previous_step_outputs),
            extra=dict(self.extra),
            placement=self.placement,
        )

    @contextmanager
    def placed(self, placement: Placement) -> Iterator[None]:
        """Children of a container run under `placement`; the scope's own comes back after."""
        outer, self.placement = self.placement, placement
        try:
            yield
        finally:
            self.placement = outer

    def state(self, base: Scope) -> ScopeState:
        """What this branch changed since it was forked from `base`, to carry across
        continue-as-new: restored over a fork of `base` it is this scope again. A copy of
        the rest (the outputs before it, often a long list) carried by each branch of a
        3,000-item map made 43.9 MB, which took the restore past the 2 s deadlock limit."""
        changed = self.previous_step_content is not base.previous_step_content
        return ScopeState(
            previous_step_content=self.previous_step_content if changed else None,
            content_carried=changed,
            previous_step_outputs={name: self.previous_step_outputs[name] for name in self.written},
            extra={
                key: value
                for key, value in self.extra.items()
                if key not in base.extra or value is not base.extra[key]
            },
            written=list(self.written),
        )

    def restore(self, state: ScopeState) -> None:
        """Take back data carried across continue-as-new."""
        if state.content_carried:
            self.previous_step_content = state.previous_step_content
        self.previous_step_outputs.update(state.previous_step_outputs)
        self.extra.update(state.extra)
        carried = state.previous_step_outputs if state.written is None else state.written
        self.written.update(dict.fromkeys(carried))

    def record(self, name: str, output: Any) -> None:
        """Make a finished node's output visible to the nodes after it."""
        self.set_output(name, output)
        self.previous_step_content = output

    def set_output(self, name: str, output: Any) -> None:
        """Set what `previous_step_outputs[name]` reads (a skipped node's is null)."""
        self.previous_step_outputs[name] = output
        self.written[name] = None

    def take(self, branch: Scope) -> None:
        """What a finished branch set, over this scope's outputs."""
        for name in branch.written:
            self.set_output(name, branch.previous_step_outputs[name])
