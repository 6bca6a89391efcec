"""Who fired a schedule's firing now, for its run's `triggeredBy` (Temporal's trigger
carries no caller).

The API keeps a request (caller, time) in the store before it asks Temporal to fire
(`Store.record_schedule_fire`); the firing's activity claims it. A firing is named by its
second (`{schedule}-run-2026-01-01T12:00:00Z`): the schedule's own firings fall on the
times its spec fires, a fire-now on the second Temporal took it in. So a firing whose
second the spec does not fire at is a fire-now, and it takes the newest request of the
schedule made within `FIRE_LEAD` before its second (or in it) that no firing took. A
fire-now in a second the spec fires at starts no run of its own (Temporal names both
firings alike): that run is the schedule's, and names no one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.workflowservice.v1 import ListScheduleMatchingTimesRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.store.base import Store
from temporal_workflows.contracts import Identity
from temporal_workflows.schedule_trigger import trigger_workflow_id

# How long after its request a fire-now's firing may come: the API asks Temporal right after
# keeping the request, and Temporal fires at once. A request older than that (its API died
# before asking, say) is never taken for a later firing.
FIRE_LEAD = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


def firing_second(schedule_id: str, firing_id: str | None) -> datetime | None:
    """The second a firing's workflow is named by; None for an id of another form."""
    prefix = f"{trigger_workflow_id(schedule_id)}-"
    if firing_id is None or not firing_id.startswith(prefix):
        return None
    try:
        return datetime.strptime(firing_id[len(prefix) :], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


async def fired_by(
    store: Store, client: Client, schedule_id: str, firing_id: str | None
) -> Identity | None:
    """The caller who fired this firing through the API; None for the schedule's own."""
    second = firing_second(schedule_id, firing_id)
    if firing_id is None or second is None or await _spec_fires_at(client, schedule_id, second):
        return None
    return await store.claim_schedule_fire(
        schedule_id, firing_id, second - FIRE_LEAD, second + SECOND
    )


async def _spec_fires_at(client: Client, schedule_id: str, second: datetime) -> bool:
    """Whether the schedule's spec fires at `second` (True for a schedule that is gone:
    its firing is then taken for no one's)."""
    start, end = Timestamp(), Timestamp()
    start.FromDatetime(second - SECOND)  # Temporal's range leaves its start out
    end.FromDatetime(second + SECOND)
    request = ListScheduleMatchingTimesRequest(
        namespace=client.namespace, schedule_id=schedule_id, start_time=start, end_time=end
    )
    try:
        matching = await client.workflow_service.list_schedule_matching_times(request)
    except RPCError as exc:
        if exc.status != RPCStatusCode.NOT_FOUND:
            raise
        return True
    return any(t.ToDatetime(tzinfo=UTC) == second for t in matching.start_time)
