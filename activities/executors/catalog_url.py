"""What a catalog `url` must be: one the MCP and A2A clients can send a request to.

Checked when the file is read (after `${VAR}`s resolve), so a URL no request can go to
stops start-up naming its entry, instead of starting and failing at each use with the
client's words (`OverflowError: connect(): port must be 0-65535.`, a "missing protocol"
for a URL that lacks only its host, a 404 for a path with a space in it). The problems
quote no part of the URL but a port's digits: the URL may hold a password.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx


def url_problem(url: str) -> str | None:
    """What is wrong with a catalog URL, said without quoting it; None when it is usable."""
    if not url.startswith(("http://", "https://")):
        return "must be an http(s) URL"
    if any(c.isspace() for c in url):
        return "holds a space (write it percent-encoded, %20)"
    if not url.isprintable():
        return "holds a control character"
    try:
        parts = urlsplit(url)
    except ValueError:  # `http://[::1/`: the only thing urlsplit itself refuses
        return "has a malformed [IPv6] host"
    if not parts.hostname:
        return "has no host (http://HOST[:PORT]/PATH)"
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port <= 65535:
        written = parts.netloc.rpartition(":")[2]
        said = f"port {written}" if written.isascii() and written.isdigit() else "its port"
        return f"{said} must be a number from 1 to 65535"
    try:
        httpx.URL(url)
    except httpx.InvalidURL:  # its message quotes the URL's parts
        return "is not a URL a request can be sent to"
    return None
