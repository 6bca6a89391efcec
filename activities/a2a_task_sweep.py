"""The sweep of abandoned A2A tasks: a task whose step is gone (its run cancelled or failed
while no worker followed it: its worker killed) is cancelled at its agent (`tasks/cancel`),
once. Only the worker following a task knows its id; steps note theirs in the store
(activities/executors/a2a_task_notes.py), and this reads the notes. A note a step said it
follows within UNFOLLOWED_AFTER is left alone, its run ended or not: that step is alive,
and cancels the task itself once it hears of the run's end (it did, a second or so after a
sweep that took it at once cancelled it "while no worker followed it").

Every worker sweeps, at its start and then every TRELLIS_A2A_TASK_SWEEP_SECONDS
(app/worker.py). A task is claimed before it is cancelled (`Store.claim_abandoned_a2a_tasks`),
as a step claims its own when it cancels it (`settle_a2a_task`): of the sweeps and the step,
one cancels it. An agent's answer settles it, even one that it cannot (the task ended, or
the agent does not know it); an agent that cannot be reached is tried again by the next
sweep, for `GIVE_UP_AFTER`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from a2a.utils.errors import (
    MethodNotFoundError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from activities.executors.a2a import CANCEL_TIMEOUT_SECONDS, A2AExecutor
from activities.executors.a2a_errors import describe_a2a_error
from activities.store.base import Store
from activities.store.records import A2ATaskRef, AbandonedA2ATask

log = logging.getLogger("trellis.a2a_tasks")
# Tasks claimed (and cancelled at once) together; a sweep goes on while it claims full batches.
BATCH = 50
# How long a claim holds off other sweeps: well past a batch's cancels (each is bounded).
LEASE = timedelta(seconds=10 * CANCEL_TIMEOUT_SECONDS)
GIVE_UP_AFTER = timedelta(hours=1)
# A task is taken only once no attempt said it follows it for this long. A live step says
# so every FOLLOW_SECONDS (3 s) at a heartbeat (each second), and hears its run's cancel at
# a heartbeat (Temporal's throttle: 1 s, app/worker.py), forgetting the note at once: its
# note is at most ~5 s old until then. Twice that, for a slow store write or a busy loop.
UNFOLLOWED_AFTER = timedelta(seconds=10)
# An agent answering these has no such task running, or will not cancel it however asked.
SETTLING_ANSWERS = (
    TaskNotFoundError,
    TaskNotCancelableError,
    UnsupportedOperationError,
    MethodNotFoundError,
)


@dataclass
class Swept:
    """What one sweep did."""

    # Cancelled, or answered for by their agents (ended, unknown there).
    settled: list[A2ATaskRef] = field(default_factory=list)
    # Agents not reached: tried again next sweep, or (past GIVE_UP_AFTER) given up.
    retrying: list[A2ATaskRef] = field(default_factory=list)
    given_up: list[A2ATaskRef] = field(default_factory=list)


class AbandonedA2ATasks:
    def __init__(
        self,
        store: Store,
        agents: A2AExecutor,
        *,
        batch: int = BATCH,
        give_up_after: timedelta = GIVE_UP_AFTER,
        unfollowed_after: timedelta = UNFOLLOWED_AFTER,
    ) -> None:
        self._store = store
        self._agents = agents
        self._batch = batch
        self._give_up_after = give_up_after
        self._unfollowed_after = unfollowed_after

    async def sweep(self) -> Swept:
        swept = Swept()
        failed: list[AbandonedA2ATask] = []
        try:
            while True:
                now = datetime.now(UTC)
                claimed = await self._store.claim_abandoned_a2a_tasks(
                    now, LEASE, self._batch, followed_before=now - self._unfollowed_after
                )
                answers = await asyncio.gather(*(self._cancel(t.ref) for t in claimed))
                for task, reason in zip(claimed, answers, strict=True):
                    if reason is None:
                        await self._store.forget_a2a_task(task.ref)
                        swept.settled.append(task.ref)
                    elif self._gives_up(task, now, reason):
                        await self._store.forget_a2a_task(task.ref)
                        swept.given_up.append(task.ref)
                    else:
                        failed.append(task)  # held (claimed) till the sweep's end
                if len(claimed) < self._batch:
                    return swept
        finally:
            for task in failed:
                await self._store.release_a2a_task(task.ref, datetime.now(UTC))
                swept.retrying.append(task.ref)

    async def _cancel(self, task: A2ATaskRef) -> str | None:
        """None once the agent has answered; else why it was not reached."""
        try:
            await self._agents.cancel_task(task.agent, task.task_id)
        except SETTLING_ANSWERS as exc:
            log.info(
                "A2A task %s of agent %r, left by node run %s, needs no cancel: %s",
                task.task_id,
                task.agent,
                task.node_run_id,
                type(exc).__name__,
            )
            return None
        except KeyError:
            return "the catalog no longer names the agent"
        except Exception as exc:
            return self._agents.redacted(describe_a2a_error(exc))
        log.info(
            "cancelled A2A task %s of agent %r: its node run %s ended while no worker followed it",
            task.task_id,
            task.agent,
            task.node_run_id,
        )
        return None

    def _gives_up(self, task: AbandonedA2ATask, now: datetime, reason: str) -> bool:
        first = task.first_failed_at or now
        if now - first < self._give_up_after:
            # Said at the first failure; each sweep's retry after it, at DEBUG only.
            log.log(
                logging.INFO if task.first_failed_at is None else logging.DEBUG,
                "could not cancel A2A task %s of agent %r (node run %s), tried again at the"
                " next sweep: %s",
                task.ref.task_id,
                task.ref.agent,
                task.ref.node_run_id,
                reason,
            )
            return False
        log.warning(
            "gave up cancelling A2A task %s of agent %r (node run %s), unreachable since %s:"
            " %s; cancel it at the agent if it matters",
            task.ref.task_id,
            task.ref.agent,
            task.ref.node_run_id,
            first.isoformat(),
            reason,
        )
        return True
