"""A URL as an error message, a log line or an answer may show it: where it went, never
what it carried. One place for the platform's URL masks (app/redaction.py, the catalog's
routes and the log and span masks of activities/secret_text.py use them too).

A `builtin:http` step's error is kept in the run's record, its events and Temporal's
history; a token in the URL's query string (or a password in its user info, or a user
name written alone: a token, often) would stay there for anyone who may read the run.
"""

from __future__ import annotations

import re

MASK = "***"
# A URL quoted in a message: a scheme, then up to a space or a quote, not ending on the
# punctuation that follows it in a sentence (`from http://h/?a=1: refused`).
_QUOTED_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*[^\s'\"<>.,:;)]")


def password_of(url: str) -> str | None:
    """The password written into `scheme://user:<password>@host…`, if any."""
    parts = _userinfo(url)
    if parts is None:
        return None
    _user, colon, password = parts[1].partition(":")
    return password if colon and password else None


def user_only_of(url: str) -> str | None:
    """The user name of `scheme://<user>@host…` written without a password: then it is
    the credential (`https://TOKEN@github.com/…`, the way tokens are often written)."""
    parts = _userinfo(url)
    if parts is None or password_of(url) is not None:
        return None
    return parts[1].partition(":")[0] or None


def userinfo_masked(url: str) -> str:
    """`url` as written, but for what its user info carries: its password
    (`scheme://user:***@host…`), or a user name written alone (`scheme://***@host…`)."""
    parts = _userinfo(url)
    if parts is None:
        return url
    scheme, userinfo, rest = parts
    if password_of(url) is not None:
        return f"{scheme}://{userinfo.partition(':')[0]}:{MASK}@{rest}"
    return f"{scheme}://{MASK}@{rest}" if user_only_of(url) else url


def masked_url(url: str) -> str:
    """`url` with its user info's credential and every query value masked, its fragment
    left out."""
    head, question, query = url.partition("#")[0].partition("?")
    return userinfo_masked(head) + (question + _masked_query(query) if question else "")


def mask_urls(text: str, *urls: str) -> str:
    """`text` (an HTTP client's error, say) with each of `urls` in it masked."""
    for url in urls:
        if url:
            text = text.replace(url, masked_url(url))
    return text


def urls_masked(text: str) -> str:
    """`text` with every URL quoted in it masked (when which URLs is not known)."""
    return _QUOTED_URL.sub(lambda found: masked_url(found.group()), text) if "://" in text else text


def quoted_urls_userinfo_masked(text: str) -> str:
    """`text` with the user info of every URL quoted in it masked (its password, or a user
    name written alone), the rest of each URL as written: a log line's URLs say where."""
    if "://" not in text:
        return text
    return _QUOTED_URL.sub(lambda found: userinfo_masked(found.group()), text)


def _userinfo(url: str) -> tuple[str, str, str] | None:
    """`url`'s scheme, user info and what follows its `@`; None when it has no user info."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    userinfo, at, hosts = rest[:end].rpartition("@")
    if not at and _password_goes_on(rest[:end]):
        # `mongodb://user:Pa55/w0rd@host/db`: a password pasted unescaped may hold a `/`
        # (`openssl rand -base64` makes them); its user info ends at the last `@` before
        # the query, not at the `/`. Over-masking such a URL's path is the lesser harm.
        end = min((i for i in map(rest.find, "?#") if i >= 0), default=len(rest))
        userinfo, at, hosts = rest[:end].rpartition("@")
    return (scheme, userinfo, hosts + rest[end:]) if at else None


def _password_goes_on(authority: str) -> bool:
    """True when `authority` (up to the first `/`) reads `user:<start of a password>`,
    not `host:port` or an IPv6 literal."""
    _user, colon, after = authority.partition(":")
    return bool(colon and after and not after.isdigit() and not authority.startswith("["))


def _masked_query(query: str) -> str:
    # Names as written (they say which parameter it was), values masked: any may be a token.
    fields = (field.partition("=") for field in query.split("&") if field)
    return "&".join(f"{name}={MASK}" if eq else name for name, eq, _value in fields)
