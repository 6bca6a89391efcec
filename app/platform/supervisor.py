"""Child processes of `trellis dev`: started in their own session, stopped without orphans."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

_PR_SET_PDEATHSIG = 1
# Resolved now, in the parent: between fork and exec the child may only call what is loaded
# (dlopen there could deadlock on a lock another thread held at fork time).
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent() -> None:
    """In the child (before exec, or first thing in a child that is not exec'd): get
    SIGTERM if the parent dies (even by SIGKILL). Linux only; elsewhere nothing."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    """One supervised process; it leads its own process group, so the group holds its children."""

    name: str
    argv: Sequence[str]
    env: dict[str, str] | None = None
    grace_seconds: float = 10.0
    # Drop what it prints on stdout (a banner not in the log format); stderr still shows.
    quiet_stdout: bool = False
    process: asyncio.subprocess.Process | None = field(default=None, init=False)
    stopping: bool = field(default=False, init=False)

    async def start(self) -> None:
        """Spawn the process in a new session (Ctrl-C in the terminal reaches only us)."""
        self.process = await asyncio.create_subprocess_exec(
            *self.argv,
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL if self.quiet_stdout else None,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process else None

    async def wait(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def stop(self) -> None:
        """SIGTERM the whole group, SIGKILL it after the grace period."""
        if self.process is None:
            return
        self.stopping = True
        self._signal_group(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), self.grace_seconds)
        except TimeoutError:
            self._signal_group(signal.SIGKILL)
            await self.process.wait()
        # The leader is gone; anything it spawned (an MCP stdio server, say) must go too.
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: signal.Signals) -> None:
        assert self.process is not None
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


async def first_exit(children: Sequence[Child]) -> Child:
    """Wait until any child exits; return it."""
    waits = {asyncio.ensure_future(c.wait()): c for c in children}
    try:
        done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        return waits[next(iter(done))]
    finally:
        for task in waits:
            task.cancel()


async def stop_all(children: Sequence[Child]) -> None:
    """Stop children one after another, in the given order."""
    for child in children:
        await child.stop()
