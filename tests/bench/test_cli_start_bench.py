"""bench.cli_start at toy size, so it does not rot (it asserts nothing about speed)."""

from __future__ import annotations

import pytest

from bench.cli_start import main


def test_the_cli_start_benchmark_times_each_command_beside_its_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--runs", "1"])
    lines = capsys.readouterr().out.splitlines()
    rows = {line[:42].strip(): line[42:].split() for line in lines[2:]}
    assert list(rows) == [
        "python + the CLI's libraries (baseline)",
        "trellis --help",
        "trellis runs list WF",
        "trellis approve RUN STEP",
        "trellis workflows list",
    ]
    assert rows["python + the CLI's libraries (baseline)"][2:] == ["1.00", "1.00"]
    assert all(float(wall) > 0 and float(cpu) > 0 for wall, cpu, *_ in rows.values())
