"""./scripts/bench: the README's one benchmark command installs what it needs, then runs
bench.run with the arguments it was given."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """scripts/bench with a wrk on PATH (a stand-in: nothing here runs under load), so
    bootstrap installs nothing."""
    wrk = tmp_path / "wrk"
    wrk.write_text("#!/bin/sh\nexit 0\n")
    wrk.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    env.pop("CI", None)  # CI=true makes bootstrap look for chromium too
    return subprocess.run(
        [str(REPO / "scripts" / "bench"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_the_bench_script_passes_its_arguments_to_bench_run(tmp_path: Path) -> None:
    done = _run(["--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage: run.py" in done.stdout
    assert "--reads-only" in done.stdout
    assert "installing Debian's wrk" not in done.stderr
