"""Keep secrets out of what Trellis prints and answers: a URL's password (or a user name
written without one), or a driver's error text that may quote one."""

from __future__ import annotations

from urllib.parse import unquote

from activities.executors.url_mask import MASK, password_of, user_only_of, userinfo_masked

# One URL mask for the platform (activities may not import app): re-exported here.
redacted_url = userinfo_masked


def scrub(text: str, *urls: str) -> str:
    """`text` with the passwords of `urls` (as written and percent-decoded) masked, and a
    user name written without a password where it is quoted as one (`name@`): the name
    alone may be a common word a message uses otherwise."""
    for url in urls:
        if (password := password_of(url)) is not None:
            for form in {password, unquote(password)}:
                text = text.replace(form, MASK)
        elif (user := user_only_of(url)) is not None:
            for form in {user, unquote(user)}:
                text = text.replace(f"{form}@", f"{MASK}@")
    return text


def describe(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
