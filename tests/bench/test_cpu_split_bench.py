"""bench.cpu_split at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

from pathlib import Path

from bench.cpu_split import measure


async def test_the_cpu_split_names_every_process_for_both_sides(tmp_path: Path) -> None:
    lines = await measure("echo", 3, tmp_path)
    text = "\n".join(lines)
    assert lines[0].startswith("ours:") and "hand-written:" in text
    for proc in ("temporal", "api", "worker", "hand", "bench client", "all"):
        assert text.count(f"  {proc} ") == 2, proc  # once per side
