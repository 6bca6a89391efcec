"""Where an agent's card is fetched from: the well-known path under the agent's URL, with
the URL's query kept as a query.

`a2a-sdk`'s resolver appends the card's path to the URL as a string, so an agent written
`http://host/agent?sig=x` was asked for `…/agent?sig=x/.well-known/agent-card.json`: the
path lost, the signature spoiled. The query goes after the card's path instead
(`…/agent/.well-known/agent-card.json?sig=x`); a fragment never reaches a server.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import httpx
from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH


def card_url(agent_url: str) -> str:
    """The URL of the card of the agent at `agent_url`."""
    parts = urlsplit(agent_url)
    path = f"{parts.path.rstrip('/')}/{AGENT_CARD_WELL_KNOWN_PATH.lstrip('/')}"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


async def fetch_card(
    http: httpx.AsyncClient, agent_url: str, http_kwargs: dict[str, object] | None = None
) -> AgentCard:
    """Fetch and parse the card of the agent at `agent_url` (the SDK's parsing and errors)."""
    parts = urlsplit(card_url(agent_url))
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = f"{parts.path}?{parts.query}" if parts.query else parts.path
    resolver = A2ACardResolver(http, base, agent_card_path=path)
    return await resolver.get_agent_card(http_kwargs=http_kwargs)
