"""bench.step_timeline at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from pathlib import Path

from bench.step_timeline import PHASES, measure


async def test_the_timeline_splits_both_sides_steps_into_every_phase(tmp_path: Path) -> None:
    lines = await measure("delay", 1, tmp_path)
    assert len(lines) == 1 + len(PHASES)
    sums = {}
    for name, line in zip(PHASES, lines[1:], strict=True):
        assert line.startswith(name)
        ours, ours_run, hand, hand_run = (float(cell) for cell in line[28:].split())
        assert min(ours, ours_run, hand, hand_run) >= 0, line
        sums[name] = (ours_run, hand_run)
    # Twenty steps on each side: twenty activities ran, twenty-one tasks were held.
    for name in ("worker holds the task", "activity runs"):
        assert min(sums[name]) > 0, name
