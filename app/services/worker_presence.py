"""Whether a worker polls the task queue: without one, runs are accepted and wait.

Asked of Temporal (`DescribeTaskQueue`), which lists the pollers it has seen lately with
the time of each one's last poll. A worker waiting on a long poll polled at most about a
minute ago, so one silent for longer than `SILENT_AFTER` is taken as gone.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from app.redaction import describe

log = logging.getLogger("trellis.readiness")
SILENT_AFTER = timedelta(minutes=2)
DESCRIBE_TIMEOUT = timedelta(seconds=2)


async def workers_polling(client: Client, task_queue: str) -> int:
    """How many workers polled `task_queue` for workflow tasks within `SILENT_AFTER`."""
    answer = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        ),
        timeout=DESCRIBE_TIMEOUT,
    )
    since = datetime.now(UTC) - SILENT_AFTER
    return sum(1 for p in answer.pollers if p.last_access_time.ToDatetime(tzinfo=UTC) >= since)


async def workers_check(client: Client, task_queue: str) -> str:
    """The readiness check's word on workers: "ok", or what is missing (never fails it)."""
    try:
        polling = await workers_polling(client, task_queue)
    except Exception as exc:  # a key that may not describe task queues, a lost connection
        log.warning("could not ask Temporal for the task queue's workers: %s", describe(exc))
        return "unknown (the API's log says why)"
    if polling:
        return "ok"
    return (
        f"none polling task queue {task_queue!r} (TRELLIS_TASK_QUEUE); "
        "runs are accepted and wait until a worker polls"
    )
