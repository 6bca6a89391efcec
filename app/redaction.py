"""Keep secrets out of what Trellis prints and answers: a URL's password, or a driver's
error text that may quote one."""

from __future__ import annotations

from urllib.parse import unquote

from activities.executors.url_mask import MASK, password_masked, password_of

# One URL mask for the platform (activities may not import app): re-exported here.
redacted_url = password_masked


def scrub(text: str, *urls: str) -> str:
    """`text` with the passwords of `urls` (as written and percent-decoded) masked."""
    for url in urls:
        password = password_of(url)
        if password is None:
            continue
        for form in {password, unquote(password)}:
            text = text.replace(form, MASK)
    return text


def describe(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
