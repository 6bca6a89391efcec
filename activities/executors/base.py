"""What every executor implements, and the two kinds of failure it may report.

The step activity builds a `StepCall`, asks the registry for the executor of the
node's `executorKey` / `a2aPool`, awaits `execute`, and classifies errors:
`PermanentError` is non-retryable (bad arguments, 4xx, unknown tool); anything else
is a failed attempt that Temporal retries per the node's stepConfig.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from activities.store.records import A2ATaskRef
from temporal_workflows.contracts import Identity

BUILTIN_PREFIX = "builtin:"
# Where a step's idempotency key travels: MCP `_meta`, A2A message metadata, HTTP header.
IDEMPOTENCY_META_KEY = "trellis/idempotencyKey"
IDEMPOTENCY_HEADER = "Idempotency-Key"
# Config keys Trellis itself reads; never sent to a tool or an agent.
RESERVED_CONFIG_KEYS = frozenset({"poolStrategy"})


def describe_error(exc: BaseException, depth: int = 0) -> str:
    """A one-line description of an error, unwrapping anyio's exception groups.

    A message that ends in a colon promised its cause (a2a-sdk's "Network communication
    error fetching agent card from …:" over a timeout, whose own text is empty): the
    cause is named after it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    if text.endswith(":") and cause is not None and depth < 3:
        return f"{described} {describe_error(cause, depth + 1)}"
    return described


class PermanentError(Exception):
    """A failure that retrying cannot fix."""


class TransientError(Exception):
    """A failure worth retrying (connection, 5xx, tool reported isError)."""


# The attribute a failed call's error carries naming where the call went (a node run's
# `resolvedExecutor`, kept when the attempt fails).
_CALLED = "trellis_resolved_executor"


def called(exc: BaseException, resolved: dict[str, Any]) -> BaseException:
    """Mark a failure with the executor its call went to, unless a closer one said so."""
    if getattr(exc, _CALLED, None) is None:
        setattr(exc, _CALLED, resolved)
    return exc


def called_by(exc: BaseException) -> dict[str, Any] | None:
    """The executor a failed call went to, when known."""
    resolved = getattr(exc, _CALLED, None)
    return resolved if isinstance(resolved, dict) else None


class A2ATasks(Protocol):
    """Where an A2A step notes the task it follows (the store's `record_a2a_task`), so that
    a worker can cancel it once its step is gone (activities/a2a_task_sweep.py)."""

    async def record_a2a_task(self, task: A2ATaskRef, at: datetime) -> None: ...

    async def follow_a2a_task(self, task: A2ATaskRef, at: datetime) -> None: ...

    async def settle_a2a_task(self, task: A2ATaskRef, now: datetime) -> bool: ...


@dataclass
class StepCall:
    run_id: str
    workflow_id: str
    node_id: str
    node_name: str
    node_run_id: str
    executor_key: str | None
    a2a_pool: list[str]
    # The node's config with templates rendered: tool arguments / agent message.
    config: dict[str, Any]
    # The run context (input, previous_step_content, previous_step_outputs, ...).
    context: dict[str, Any]
    attempt: int = 1
    # Executors that wait long call this periodically (Temporal activity heartbeat).
    heartbeat: Callable[..., None] = field(default=lambda *details: None)
    # Who triggered the run: MCP and A2A requests carry a service token for them.
    triggered_by: Identity | None = None
    # What an earlier attempt of this node run last sent with its heartbeat (Temporal keeps
    # it across attempts): where work that attempt started, and may have lost with its
    # worker, can be picked up. Empty on a first attempt.
    earlier_progress: dict[str, Any] = field(default_factory=dict)
    # When Temporal times this attempt out (seconds since the epoch; None when unknown): a
    # pool tells by it whether an earlier attempt was held by one member until its timeout.
    deadline: float | None = None
    # Where an A2A step notes the task it follows (the step activity's store); None: nowhere.
    a2a_tasks: A2ATasks | None = None

    @property
    def idempotency_key(self) -> str:
        """The same for every attempt of this node run, on any worker: its node-run id.

        `{runId}.{nodeId}.{count}` is fixed by the workflow (replayed identically after a
        worker restart) and Temporal's retries reuse it; a loop iteration, a map item or
        a node retried from the API is a new node run and so a new key.
        """
        return self.node_run_id

    def request_meta(self) -> dict[str, Any]:
        """What a tool or an agent may read to deduplicate and to trace a request."""
        return {
            IDEMPOTENCY_META_KEY: self.idempotency_key,
            "trellis/runId": self.run_id,
            "trellis/nodeRunId": self.node_run_id,
            "trellis/attempt": self.attempt,
        }


@dataclass
class StepOutcome:
    output: Any
    # Which executor ran and why (kind, key, poolIndex, reason), shown on the node run.
    resolved_executor: dict[str, Any] | None = None


def payload_config(config: dict[str, Any]) -> dict[str, Any]:
    """The rendered config minus Trellis's own keys: what a tool or an agent receives."""
    return {k: v for k, v in config.items() if k not in RESERVED_CONFIG_KEYS}


class Executor(Protocol):
    async def execute(self, call: StepCall) -> StepOutcome: ...
