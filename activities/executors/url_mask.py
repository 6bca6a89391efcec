"""A URL as an error message may show it: where it went, never what it carried.

A `builtin:http` step's error is kept in the run's record, its events and Temporal's
history; a token in the URL's query string (or a password in its user info) would stay
there for anyone who may read the run.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MASK = "***"


def masked_url(url: str) -> str:
    """`url` with its password and every query value masked, its fragment left out."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL httpx could send either: show its scheme only
        return f"{url.partition(':')[0]}:{MASK}"
    userinfo, at, host = parts.netloc.rpartition("@")
    if at:
        user, colon, _password = userinfo.partition(":")
        host = f"{user}:{MASK}@{host}" if colon else f"{user}@{host}"
    return urlunsplit((parts.scheme, host, parts.path, _masked_query(parts.query), ""))


def mask_urls(text: str, *urls: str) -> str:
    """`text` (an HTTP client's error, say) with each of `urls` in it masked."""
    for url in urls:
        if url:
            text = text.replace(url, masked_url(url))
    return text


def _masked_query(query: str) -> str:
    # Names as written (they say which parameter it was), values masked: any may be a token.
    fields = (field.partition("=") for field in query.split("&") if field)
    return "&".join(f"{name}={MASK}" if eq else name for name, eq, _value in fields)
