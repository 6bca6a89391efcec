"""StepConfig -> Temporal retry policy, and readable messages from activity failures."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TimeoutError,
)

from temporal_workflows.definition import StepConfig

# The error type executors raise for failures retrying cannot fix.
PERMANENT_ERROR_TYPE = "PermanentError"
# onError=retry with maxRetries left at 0 still retries this often.
DEFAULT_RETRIES_FOR_RETRY = 3


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
