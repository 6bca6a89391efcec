"""bench.server_start at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

import pytest

from bench.server_start import main


def test_the_server_start_benchmark_times_each_process_beside_its_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--runs", "1", "--no-warm-up"])
    lines = capsys.readouterr().out.splitlines()
    table = lines[lines.index(next(line for line in lines if line.startswith("process"))) + 1 :]
    rows = {line[:44].strip(): line[44:].split() for line in table}
    assert list(rows) == [
        "API written by hand (baseline)",
        "trellis api",
        "trellis api, MCP server in the catalog",
        "worker written by hand (baseline)",
        "trellis worker",
        "trellis worker, MCP server in the catalog",
    ]
    for baseline in ("API written by hand (baseline)", "worker written by hand (baseline)"):
        assert rows[baseline][2:] == ["1.00", "1.00"]
    assert all(float(wall) > 0 and float(cpu) > 0 for wall, cpu, *_ in rows.values())
