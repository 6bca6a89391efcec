"""A schedule's update sent with the conflict token of the description it was made from.

`ScheduleHandle.update` describes the schedule, hands the description to an updater and
sends what that returns, without the description's conflict token (Python SDK 1.35): a
change landing between the two is overwritten. Sent with the token, an update of a
schedule changed since (another update, a pause) is dropped by Temporal, yet answered
with success (dev server 1.32): the caller describes the schedule again to learn which.
"""

from __future__ import annotations

import uuid

from temporalio.api.workflowservice.v1 import UpdateScheduleRequest
from temporalio.client import Client, Schedule, ScheduleDescription


async def update_over(client: Client, read: ScheduleDescription, schedule: Schedule) -> None:
    """Replace the schedule described by `read` with `schedule`, unless it changed since
    `read` was described (then Temporal drops the update, silently)."""
    request = UpdateScheduleRequest(
        namespace=client.namespace,
        schedule_id=read.id,
        # The SDK's own conversion, as its update makes it (private: a change there fails
        # tests/schedules/test_schedule_if_match.py).
        schedule=await schedule._to_proto(client),
        identity=client.identity,
        request_id=str(uuid.uuid4()),
        conflict_token=read.raw_description.conflict_token,
    )
    await client.workflow_service.update_schedule(request, retry=True)
