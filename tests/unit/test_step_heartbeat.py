"""Which of an attempt's heartbeat silences Temporal timed out: the latest, not an old one
it let pass (found by a review: the first long silence was taken, and an attempt whose run
later closed was called timed out)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from unittest import mock

from activities import steps


async def test_only_a_recent_silence_is_taken_for_a_heartbeat_timeout() -> None:
    loop = asyncio.get_running_loop()
    clock = [100.0]
    with (
        mock.patch.object(loop, "time", lambda: clock[0]),
        mock.patch.object(steps.activity, "heartbeat", lambda *details: None),
    ):
        beat = steps._Heartbeat()

        def at(moment: float) -> None:
            clock[0] = moment
            beat._sent()

        at(101)
        at(108)  # 7 s without a heartbeat
        for moment in range(109, 120):
            at(moment)
        # Beats for 11 s since: Temporal did not time that one out.
        assert beat.silence_over(timedelta(seconds=5)) is None
        at(127)  # 8 s without, then beats: Temporal answers those "not found"
        at(128)
        at(129)
        assert beat.silence_over(timedelta(seconds=5)) == (19.0, 8.0)
        clock[0] = 136  # and one going on now
        assert beat.silence_over(timedelta(seconds=5)) == (29.0, 7.0)
        assert beat.silence_over(None) is None
