"""The read cache: an answer is reused only at the change count it was read at."""

from __future__ import annotations

from app.services.read_cache import ReadCache


class Builder:
    """Builds numbered bodies of a given size, counting how often it was asked."""

    def __init__(self, size: int = 10) -> None:
        self.size = size
        self.calls = 0

    async def __call__(self) -> bytes:
        self.calls += 1
        return str(self.calls).encode().ljust(self.size, b".")


async def test_an_answer_is_reused_while_the_count_stands() -> None:
    cache, build = ReadCache(1000), Builder()
    first = await cache.answer("run", 3, build)
    assert first[1] is True
    assert await cache.answer("run", 3, build) == (first[0], False)
    assert build.calls == 1


async def test_a_new_count_builds_afresh_and_keeps_the_new_answer() -> None:
    cache, build = ReadCache(1000), Builder()
    first, _ = await cache.answer("run", 3, build)
    second, built = await cache.answer("run", 4, build)
    assert built and second != first and build.calls == 2
    assert await cache.answer("run", 4, build) == (second, False)
    # A count that went back (a counter is never expected to) is a change too.
    assert (await cache.answer("run", 3, build))[0] not in (first, second)


async def test_without_a_count_or_room_nothing_is_kept() -> None:
    build = Builder()
    uncounted = ReadCache(1000)
    await uncounted.answer("run", None, build)
    await uncounted.answer("run", None, build)
    off = ReadCache(0)
    await off.answer("run", 1, build)
    await off.answer("run", 1, build)
    assert build.calls == 4 and len(uncounted) == len(off) == 0


async def test_the_least_recently_used_answer_goes_first_when_over_budget() -> None:
    cache, build = ReadCache(25), Builder(size=10)
    await cache.answer("a", 1, build)
    await cache.answer("b", 1, build)
    await cache.answer("a", 1, build)  # a is now the most recently used
    await cache.answer("c", 1, build)  # 30 bytes > 25: b goes
    assert len(cache) == 2 and cache.size_bytes == 20
    calls = build.calls
    await cache.answer("a", 1, build)
    await cache.answer("c", 1, build)
    assert build.calls == calls
    await cache.answer("b", 1, build)
    assert build.calls == calls + 1


async def test_an_answer_larger_than_the_budget_is_not_kept() -> None:
    cache, build = ReadCache(5), Builder(size=10)
    await cache.answer("a", 1, build)
    assert len(cache) == 0 and cache.size_bytes == 0
