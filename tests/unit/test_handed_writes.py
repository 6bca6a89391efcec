"""A batch several steps carry is written once per worker; a failed write is not remembered
(activities/handed_writes.py)."""

from __future__ import annotations

import asyncio

import pytest

from activities.handed_writes import HandedWrites


class _Writes:
    def __init__(self, fail: int = 0) -> None:
        self.count, self.fail = 0, fail
        self.release = asyncio.Event()

    async def write(self) -> None:
        self.count += 1
        await self.release.wait()
        if self.count <= self.fail:
            raise OSError("the store is unavailable")


async def test_steps_carrying_one_batch_wait_for_its_one_write() -> None:
    handed, writes = HandedWrites(), _Writes()
    waiting = [
        asyncio.create_task(handed.write_once(("run", 1, "rn"), writes.write)) for _ in range(5)
    ]
    await asyncio.sleep(0.01)
    assert writes.count == 1 and not any(w.done() for w in waiting)  # all wait for it
    writes.release.set()
    await asyncio.gather(*waiting)
    await handed.write_once(("run", 1, "rn"), writes.write)  # a later one: written already
    assert writes.count == 1
    await handed.write_once(("run", 2, "r"), writes.write)  # another batch
    await handed.write_once(None, writes.write)  # unkeyed: always written
    await handed.write_once(None, writes.write)
    assert writes.count == 4


async def test_a_failed_write_fails_its_waiters_and_the_next_step_writes_again() -> None:
    handed, writes = HandedWrites(), _Writes(fail=1)
    waiting = [asyncio.create_task(handed.write_once("batch", writes.write)) for _ in range(3)]
    await asyncio.sleep(0.01)
    writes.release.set()
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(o, OSError) for o in outcomes) and writes.count == 1
    await handed.write_once("batch", writes.write)
    assert writes.count == 2


async def test_a_step_cancelled_while_it_waits_leaves_the_write_to_the_others() -> None:
    handed, writes = HandedWrites(), _Writes()
    first = asyncio.create_task(handed.write_once("batch", writes.write))
    second = asyncio.create_task(handed.write_once("batch", writes.write))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    writes.release.set()
    await second
    assert writes.count == 1
