"""Run a `trellis` client command in this process, as its console script would run it.

A `trellis` process spends ~0.7 s importing its libraries before it sends one request;
the CLI tests send hundreds. Here `app.cli.main` runs under click's `CliRunner` isolation:
its own stdin, stdout and stderr, and exactly the environment a process would get. What
needs a process (a terminal, a signal, the platform commands, the entry point itself)
is still run as one (tests/platform/test_cli_for_people.py and conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

from click.testing import CliRunner

from app.cli.main import main


def run_cli(
    args: Sequence[str], env: Mapping[str, str], stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """`trellis ARGS` with environment `env` (and nothing else of this process's), `stdin`
    as its input; its exit code and what it wrote, as `subprocess.run` would give them."""
    # A process would see `env` alone: every variable of ours that it lacks is unset.
    overrides: dict[str, str | None] = {name: None for name in os.environ if name not in env}
    overrides.update(env)
    codes: list[int] = []
    with CliRunner().isolation(input=stdin, env=overrides) as (stdout, stderr, _):
        # In a thread, so that a command that never ends fails the test, as a timeout would.
        command = threading.Thread(target=lambda: codes.append(main(list(args))), daemon=True)
        command.start()
        command.join(timeout)
        assert not command.is_alive(), f"`trellis {' '.join(args)}` still running after {timeout} s"
        sys.stdout.flush()
        sys.stderr.flush()
    return subprocess.CompletedProcess(
        ["trellis", *args],
        codes[0] if codes else 1,
        stdout.getvalue().decode(),
        stderr.getvalue().decode(errors="backslashreplace"),
    )
