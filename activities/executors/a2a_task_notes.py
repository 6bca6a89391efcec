"""The tasks an A2A step attempt follows, noted in the store (`Store.record_a2a_task`): only
the worker following a task knows its id, so a worker killed took it along, and its run
cancelled meanwhile left the task running at the agent. A worker's sweep cancels a noted
task whose step is gone (activities/a2a_task_sweep.py).

A task is noted once it has worked NOTE_AFTER_SECONDS (one done sooner costs no write), in
the background (the step does not wait for the write). While the step follows it, its
heartbeats say so in the note every FOLLOW_SECONDS (`Store.follow_a2a_task`): a sweep takes
only a task no attempt has said it follows for a while, so a run cancelled under a live
step leaves the cancel to the step, which hears of it at its next heartbeat. When the step
is done with it (it ended, or the step cancels it) its note goes, unless a sweep has
claimed it: that sweep cancels it, and the step does not.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from activities.executors.base import StepCall
from activities.store.records import A2ATaskRef

log = logging.getLogger(__name__)

# As long as a step runs before it shows as running (activities/steps.py).
NOTE_AFTER_SECONDS = 0.2
# How often, at most, a step following noted tasks says so (at a heartbeat, each second):
# one write per step every few seconds; the sweep's bound (a2a_task_sweep.py) is past it.
FOLLOW_SECONDS = 3.0
# Notes being written: held here, since the event loop keeps only weak references to tasks.
_WRITING: set[asyncio.Task[Any]] = set()


class TaskNotes:
    """The notes of one attempt's calls to one agent."""

    def __init__(self, call: StepCall, agent: str) -> None:
        self._call = call
        self._agent = agent
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._writes: dict[str, asyncio.Task[bool]] = {}
        self._followed_at = 0.0  # the loop's clock at the last note or follow written
        self._follow: asyncio.Task[None] | None = None

    def following(self, task_id: str, *, at_once: bool = False) -> None:
        """The step follows this task: noted if it still works after NOTE_AFTER_SECONDS
        (`at_once`: now; an earlier attempt's task, which that attempt may have noted)."""
        if self._call.a2a_tasks is None or task_id in self._timers or task_id in self._writes:
            return
        if at_once:
            self._note(task_id)
        else:
            loop = asyncio.get_running_loop()
            self._timers[task_id] = loop.call_later(NOTE_AFTER_SECONDS, self._note, task_id)

    def still_following(self) -> None:
        """Called at each heartbeat: every FOLLOW_SECONDS, the noted tasks' notes say they are
        still followed (in the background; one such write at a time)."""
        now = asyncio.get_running_loop().time()
        if now - self._followed_at < FOLLOW_SECONDS or self._follow is not None:
            return
        noted = [task_id for task_id, write in self._writes.items() if _written(write)]
        if not noted:
            return
        self._followed_at = now
        self._follow = asyncio.create_task(self._say_following(noted))
        _WRITING.add(self._follow)
        self._follow.add_done_callback(_WRITING.discard)

    async def _say_following(self, task_ids: list[str]) -> None:
        assert self._call.a2a_tasks is not None
        try:
            for task_id in task_ids:
                await self._call.a2a_tasks.follow_a2a_task(self._ref(task_id), _now())
        except Exception as exc:  # the next beat's try may land before a sweep looks
            log.info("could not say A2A task notes %s are still followed: %s", task_ids, exc)
        finally:
            self._follow = None

    async def done(self, task_id: str) -> bool:
        """The step is done with the task: its note goes. False when a sweep holds it (and
        cancels it): then the step must not cancel it too."""
        timer = self._timers.pop(task_id, None)
        if timer is not None:
            timer.cancel()  # never noted
            return True
        write = self._writes.pop(task_id, None)
        if write is None or not await asyncio.shield(write):
            return True
        return await self.settle(task_id)

    async def settle(self, task_id: str) -> bool:
        """Forget the task's note, whoever wrote it (`Store.settle_a2a_task`)."""
        if self._call.a2a_tasks is None:
            return True
        try:
            return await self._call.a2a_tasks.settle_a2a_task(self._ref(task_id), _now())
        except Exception as exc:  # the sweep cancels it once its run ends: harmless
            log.warning("could not settle the note of A2A task %s: %s", task_id, exc)
            return True

    def _ref(self, task_id: str) -> A2ATaskRef:
        return A2ATaskRef(self._call.run_id, self._call.node_run_id, self._agent, task_id)

    def _note(self, task_id: str) -> None:
        self._timers.pop(task_id, None)
        self._followed_at = asyncio.get_running_loop().time()
        write = asyncio.create_task(self._write(task_id))
        self._writes[task_id] = write
        _WRITING.add(write)
        write.add_done_callback(_WRITING.discard)

    async def _write(self, task_id: str) -> bool:
        assert self._call.a2a_tasks is not None
        try:
            await self._call.a2a_tasks.record_a2a_task(self._ref(task_id), _now())
        except Exception as exc:
            log.warning(
                "could not note A2A task %s of agent %r (were this worker lost, no worker"
                " could cancel it): %s",
                task_id,
                self._agent,
                exc,
            )
            return False
        return True


def _written(write: asyncio.Task[bool]) -> bool:
    return write.done() and not write.cancelled() and write.result()


def _now() -> datetime:
    return datetime.now(UTC)
