"""Keep secrets out of what Trellis prints and answers: a URL's password, or a driver's
error text that may quote one."""

from __future__ import annotations

from urllib.parse import unquote

MASK = "***"


def _password(url: str) -> str | None:
    _scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    userinfo, at, _hosts = authority.rpartition("@")
    if not at:
        return None
    _user, colon, password = userinfo.partition(":")
    return password if colon and password else None


def redacted_url(url: str) -> str:
    """The URL with its password (`scheme://user:<password>@host…`) replaced by ***."""
    password = _password(url)
    if password is None:
        return url
    scheme, _, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    userinfo, _, hosts = authority.rpartition("@")
    user = userinfo.partition(":")[0]
    return f"{scheme}://{user}:{MASK}@{hosts}{slash}{tail}"


def scrub(text: str, *urls: str) -> str:
    """`text` with the passwords of `urls` (as written and percent-decoded) masked."""
    for url in urls:
        password = _password(url)
        if password is None:
            continue
        for form in {password, unquote(password)}:
            text = text.replace(form, MASK)
    return text


def describe(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
