"""Whether the caller of an open event stream may still read its run.

A request is checked once, when it arrives; a stream stays open for as long as its run
goes on (weeks, at a gate). So the stream asks again, as a new request would be asked:
the token still accepted, the workflow and the run still there, VIEW still held, with the
owner and grants read afresh from the store. When the answer is no, the stream ends, and
the client's reconnect gets the usual 401 or 404.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from activities.store.base import Store
from app.auth.acl import permissions_of
from app.auth.caller import Caller
from app.auth.tokens import LEEWAY_SECONDS


@dataclass
class StreamAccess:
    """The checks of the request that opened a stream, made again while it is open."""

    store: Store
    caller: Caller
    workflow_id: str
    run_id: str
    # How often `allows_while_idle` reads the store.
    recheck_seconds: float
    # The request that opened the stream has just checked.
    _checked_at: float = field(default_factory=time.monotonic)

    async def allows(self) -> bool:
        """Ask the store now (before anything more is sent)."""
        if self.token_expired():
            return False
        self._checked_at = time.monotonic()
        # A run never moves to another workflow; it only goes, with its workflow: the
        # workflow's access answers for the run too.
        access = await self.store.get_workflow_access(self.workflow_id)
        return access is not None and "VIEW" in permissions_of(self.caller, access)

    async def allows_sending(self) -> bool:
        """Before a batch is sent: `allows`, but for the dev admin, whom nothing can revoke
        and whose lack of a token cannot expire, only as often as `allows_while_idle`
        (a deleted workflow's runs are cancelled first, which ends their streams)."""
        if self.caller.admin:
            return await self.allows_while_idle()
        return await self.allows()

    async def allows_while_idle(self) -> bool:
        """`allows`, but reading the store only once every `recheck_seconds`."""
        if self.token_expired():
            return False
        if time.monotonic() - self._checked_at < self.recheck_seconds:
            return True
        return await self.allows()

    def token_expired(self) -> bool:
        """Whether a request with the caller's token would now be refused as expired."""
        expires_at = self.caller.expires_at
        return expires_at is not None and time.time() > expires_at + LEEWAY_SECONDS
