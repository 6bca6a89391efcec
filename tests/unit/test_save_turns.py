"""A workflow's saves take turns in one API process, but never wait on one for long."""

from __future__ import annotations

import asyncio

import pytest

from app.services import turns as turns_module
from app.services.turns import Turns


async def test_turns_of_one_key_follow_each_other_and_other_keys_do_not_wait() -> None:
    turns, order = Turns(), []

    async def take(key: str, name: str, hold: float) -> None:
        async with turns.turn(key):
            order.append(f"{name}+")
            await asyncio.sleep(hold)
            order.append(f"{name}-")

    await asyncio.gather(take("a", "a1", 0.05), take("a", "a2", 0), take("b", "b1", 0))
    assert order.index("a1-") < order.index("a2+")  # one turn at a time per key
    assert order.index("b1+") < order.index("a1-")  # another key does not wait
    assert not turns._locks and not turns._waiting  # each lock went with its last user


async def test_a_turn_held_too_long_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    # A save validating against a hanging MCP server held every save, toggle and delete
    # of its workflow behind it.
    monkeypatch.setattr(turns_module, "TURN_WAIT_SECONDS", 0.1)
    turns, released = Turns(), asyncio.Event()

    async def hanging() -> None:
        async with turns.turn("a"):
            await released.wait()

    holder = asyncio.create_task(hanging())
    await asyncio.sleep(0.01)
    async with asyncio.timeout(1):
        async with turns.turn("a"):
            pass
    released.set()
    await holder
    assert not turns._locks
