"""StepConfig -> Temporal retry policy, and readable messages from activity failures."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError,
    TimeoutType,
)

from temporal_workflows.definition import StepConfig

# The error type executors raise for failures retrying cannot fix.
PERMANENT_ERROR_TYPE = "PermanentError"
# onError=retry with maxRetries left at 0 still retries this often.
DEFAULT_RETRIES_FOR_RETRY = 3
# What Temporal's worker reports for an attempt its shutdown cut off (sdk-core).
WORKER_SHUTDOWN_ERROR_TYPE = "WorkerShutdown"
# What the step activity writes for such an attempt (no failure of the step's own).
WORKER_SHUTDOWN_ERROR = "the worker shut down before the attempt ended; it runs again"
# An operator's pause or reset of a step's activity in Temporal (the Web UI, `temporal
# activity pause|reset`) cuts its attempt off. The step activity ends such an attempt with
# these types itself (the SDK's own names), its node run showing the error: a pause holds
# the step (Temporal schedules no retry until it is unpaused); a reset fails the activity
# with the attempt's number as its detail, and the workflow runs the step again with a
# fresh set of attempts (numbered on from it).
ACTIVITY_PAUSED_ERROR_TYPE = "ActivityPause"
ACTIVITY_RESET_ERROR_TYPE = "ActivityReset"
PAUSED_ERROR = "the step's activity was paused in Temporal; it runs again when unpaused"
RESET_ERROR = "the step's activity was reset in Temporal; it runs again with fresh attempts"
# An attempt lost with its worker (a deploy, a crash) is not the step failing: after the
# last attempt Temporal's policy allows, the workflow runs that attempt again, this often.
LOST_WORKER_RERUNS = 5
# A rerun is one attempt: the one the lost worker took away (the policy's others were used).
RERUN_POLICY = RetryPolicy(maximum_attempts=1)
# The heartbeat detail naming where the call in flight went (its `resolvedExecutor`), kept
# on the node run when the attempt times out.
CALLING_KEY = "calling"


def attempts(config: StepConfig) -> int:
    """Total attempts: 1 + maxRetries."""
    retries = config.max_retries
    if config.on_error == "retry" and retries == 0:
        retries = DEFAULT_RETRIES_FOR_RETRY
    return 1 + retries


def retry_policy(config: StepConfig) -> RetryPolicy:
    """Exponential backoff from backoffBaseSeconds, capped at backoffMaxSeconds."""
    base = config.backoff_base_seconds
    return RetryPolicy(
        initial_interval=timedelta(seconds=base),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=max(base, config.backoff_max_seconds)),
        maximum_attempts=attempts(config),
        non_retryable_error_types=[PERMANENT_ERROR_TYPE],
    )


def lost_with_its_worker(error: ActivityError) -> bool:
    """Whether the activity's last attempt ended because its worker went away: cut off by
    the worker's shutdown, or no heartbeat (the process died, or hung)."""
    cause = error.cause
    if isinstance(cause, TimeoutError):
        return cause.type == TimeoutType.HEARTBEAT
    return isinstance(cause, ApplicationError) and cause.type == WORKER_SHUTDOWN_ERROR_TYPE


def reset_attempt(error: ActivityError) -> int | None:
    """The attempt an operator's reset cut off (the step activity's own reset failure)."""
    cause = error.cause
    if not isinstance(cause, ApplicationError) or cause.type != ACTIVITY_RESET_ERROR_TYPE:
        return None
    details = cause.details
    return details[0] if details and isinstance(details[0], int) else None


def progress_in(heartbeat_details: Sequence[Any]) -> dict[str, Any] | None:
    """The progress a step's heartbeat carried: its first detail, a dict (see StepCall)."""
    if heartbeat_details and isinstance(heartbeat_details[0], dict):
        return heartbeat_details[0]
    return None


def last_progress(error: ActivityError) -> dict[str, Any] | None:
    """What the activity's last attempt sent with its last heartbeat, when it timed out."""
    cause = error.cause
    if isinstance(cause, TimeoutError):
        return progress_in(cause.last_heartbeat_details)
    return None


def start_to_close_message(timeout_seconds: float, progress: dict[str, Any] | None) -> str:
    """A start-to-close timeout's error: the limit, and what the attempt was waiting for
    when its heartbeats said (`waitingFor`: a tool, an agent, a pool's member)."""
    said = f"step timed out (start-to-close, timeoutSeconds {timeout_seconds:g})"
    waiting = (progress or {}).get("waitingFor")
    return f"{said} waiting for {waiting}" if isinstance(waiting, str) and waiting else said


def start_to_close_timeout(error: BaseException) -> TimeoutError | None:
    """The timeout, when Temporal timed the activity's last attempt out (start-to-close)."""
    cause = error.cause if isinstance(error, ActivityError) else None
    if isinstance(cause, TimeoutError) and cause.type == TimeoutType.START_TO_CLOSE:
        return cause
    return None


def timed_out_error(
    timeout: TimeoutError, timeout_seconds: float
) -> tuple[str, dict[str, Any] | None]:
    """A last attempt Temporal timed out: its error, as the attempt's own says it, and the
    executor it was calling (`resolvedExecutor`), from its last heartbeat's details (kept in
    the history, so a replay reads the same)."""
    progress = progress_in(timeout.last_heartbeat_details)
    calling = (progress or {}).get(CALLING_KEY)
    message = start_to_close_message(timeout_seconds, progress)
    return message, calling if isinstance(calling, dict) else None


def failure_message(error: BaseException) -> str:
    """The innermost meaningful message of an activity failure."""
    cause: BaseException | None = error
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, TimeoutError):
        return (
            f"step timed out ({cause.type.name.lower().replace('_', '-')})"
            if cause.type
            else ("step timed out")
        )
    if isinstance(cause, CancelledError):
        return "step was cancelled"
    if isinstance(cause, ApplicationError):
        return cause.message or (cause.type or "step failed")
    return str(cause) if cause is not None else "step failed"
