"""What a request to an A2A agent carries: its catalog headers and the caller's service
token, only when it goes to the origin (scheme, host, port) the catalog names for it.

The agent's card says where its messages go (`supportedInterfaces`), and a card may name
another origin than the catalog's: an outside audit saw the agent's `X-Agent-Key` and the
user's service token sent to whatever the card named. The A2A SDK builds those requests
from the card, so the check is made on each request as it is sent (the client's `auth`),
against the agent the current task is calling (`calling`). A request to another origin
goes without either, and the first one to each such origin logs a WARNING naming both.
The agents' client follows no redirect (httpx's default), so a redirect cannot carry them
elsewhere either. docs/security.md, "Catalog credentials".
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator

import httpx

from activities.executors.endpoint import Endpoint, Origin, origin_of

log = logging.getLogger(__name__)

_CALLING: contextvars.ContextVar[Endpoint | None] = contextvars.ContextVar(
    "trellis_a2a_agent", default=None
)

Auth = Callable[[httpx.Request], httpx.Request]


@contextlib.contextmanager
def calling(agent: Endpoint) -> Iterator[None]:
    """Requests sent from this context are for `agent` (its catalog entry's endpoint)."""
    token = _CALLING.set(agent)
    try:
        yield
    finally:
        _CALLING.reset(token)


def agent_credentials(service_token: Auth) -> Auth:
    """An httpx `auth` giving a request the catalog headers of the agent being called, then
    `service_token`'s token, when it goes to that agent's catalog origin; else nothing."""
    warned: set[tuple[str, Origin | None]] = set()

    def auth(request: httpx.Request) -> httpx.Request:
        agent = _CALLING.get()
        if agent is None:
            return request  # no catalog agent named: nothing of anyone's to send
        there = origin_of(request.url)
        if agent.origin is None or there != agent.origin:
            if (agent.name, there) not in warned:
                warned.add((agent.name, there))
                log.warning(
                    "A2A agent %r: its card sends requests to %s, not to %s where the catalog"
                    " names it; they go there without the catalog's headers and without a"
                    " service token",
                    agent.name,
                    there,
                    agent.origin,
                )
            return request
        for name, value in agent.headers.items():
            request.headers[name] = value
        return service_token(request)

    return auth
