"""A test's own Temporal dev server, known to be the one that answers on its port.

A port found free can be taken before the server binds it (by another test's dev server,
its port picked the same way). This server then exits, and a wait on the address passes
against the other one, whose answers the test reads as its own. So each server is started
with a namespace of its own, and the wait is for that namespace. (A /readyz that answered
200 from a SIGSTOPped server, in CI, was first put down to this; its cause was the stop's
lag, tests/support/frozen.py.)
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from app.platform.devserver import DevServerError, temporal_binary, wait_for_temporal
from app.platform.devserver_flags import dev_server_command
from app.settings import Settings
from tests.support.processes import Processes, TrellisProcess
from tests.support.server import free_port

ATTEMPTS = 3


async def own_temporal(processes: Processes, db_file: Path) -> tuple[TrellisProcess, int]:
    """A dev server on a free port, once it answers there; another port if that one was taken."""
    for _ in range(ATTEMPTS):
        port = free_port()
        try:
            return await start_temporal(processes, port, db_file), port
        except PortTaken:
            continue
    raise AssertionError(f"no free port for a Temporal dev server in {ATTEMPTS} attempts")


async def start_temporal(
    processes: Processes, port: int, db_file: Path, within: float = 60.0
) -> TrellisProcess:
    """A dev server on `port` (a restart keeps its file), once it answers; PortTaken if it exits."""
    mark = f"own-{uuid.uuid4().hex[:12]}"
    argv = dev_server_command(
        temporal_binary(), port=port, ui_port=free_port(), db_file=db_file, namespace="default"
    )
    argv += ["--headless", "--namespace", mark]
    temporal = processes.spawn("temporal", argv, dict(os.environ))
    settings = Settings(temporal_address=f"127.0.0.1:{port}", temporal_namespace=mark)
    deadline = time.monotonic() + within
    while temporal.running():
        try:
            await wait_for_temporal(settings, within=1.0)
            return temporal
        except DevServerError:
            if time.monotonic() > deadline:
                raise
    raise PortTaken(f"the dev server on port {port} exited:\n{temporal.output()}")


class PortTaken(AssertionError):
    """The dev server exited before it answered (its port was taken, mostly)."""
