"""A schedule's own large argument after an update: the copy it replaced goes to the sweep.

Each create or update stores the schedule's argument (its initial input over the offload
threshold) anew, under the id of the workflow the schedule starts (`PayloadHolder.SCHEDULE`,
kept while the schedule is). An update that changed it left the old copy until the
schedule's delete: a schedule updated daily kept a copy a day. After an update, what
Temporal says the schedule carries stays; older copies go to the firings' sweep, which
deletes them an hour on (a firing started before the update reads its argument meanwhile).
"""

from __future__ import annotations

from datetime import datetime

from temporalio.client import ScheduleDescription

from activities.payloads import claimed_keys
from activities.store.base import Store
from temporal_workflows.schedule_trigger import trigger_workflow_id


async def release_replaced_argument(
    store: Store, described: ScheduleDescription, since: datetime
) -> None:
    """Hand the schedule's own references made before `since` (the update's start) to the
    sweep, but for the argument `described` (after the update) carries. Copies made since
    are a concurrent update's: the description after it keeps the one that won."""
    action = described.raw_description.schedule.action.start_workflow
    keep = sorted(claimed_keys(action.input.payloads))
    await store.replace_schedule_payloads(trigger_workflow_id(described.id), keep, since)
