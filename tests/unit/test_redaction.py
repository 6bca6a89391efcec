"""Passwords in URLs (or user names written alone), and in driver messages that quote
them, never reach output."""

from __future__ import annotations

import pytest

from app.redaction import redacted_url, scrub


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("mongodb://admin:pw@db:27017/trellis", "mongodb://admin:***@db:27017/trellis"),
        (
            "mongodb://u:p%40ss@h1:1,h2:2/db?replicaSet=rs",
            "mongodb://u:***@h1:1,h2:2/db?replicaSet=rs",
        ),
        (
            "mongodb+srv://u:pw@cluster.example.com/prod",
            "mongodb+srv://u:***@cluster.example.com/prod",
        ),
        # A user name written alone may be the credential (a token): masked in any URL.
        ("mongodb://user-only@db/x", "mongodb://***@db/x"),
        # A password pasted unescaped may hold a `/` (found by an audit: shown in clear).
        (
            "mongodb://trellis:Pa55/w0rd@127.0.0.1:18198/trellis",
            "mongodb://trellis:***@127.0.0.1:18198/trellis",
        ),
        ("mongodb://u:a/b/c@h/db?authSource=admin", "mongodb://u:***@h/db?authSource=admin"),
        # A port is no password, and a path may hold an `@`.
        ("https://host:8080/users/@me", "https://host:8080/users/@me"),
        ("https://github.com/o/r@v1", "https://github.com/o/r@v1"),
        ("mongodb://db:27017/trellis", "mongodb://db:27017/trellis"),
        ("sqlite:////data/trellis.db", "sqlite:////data/trellis.db"),
    ],
)
def test_a_url_shows_everything_but_its_password(url: str, shown: str) -> None:
    assert redacted_url(url) == shown


def test_a_message_quoting_the_password_is_scrubbed() -> None:
    url = "mongodb://u:p%40ss@db/x"
    message = "auth failed for u with p@ss at mongodb://u:p%40ss@db/x"
    assert scrub(message, url) == "auth failed for u with *** at mongodb://u:***@db/x"


def test_a_message_quoting_a_password_holding_a_slash_is_scrubbed() -> None:
    url = "mongodb://trellis:Pa55/w0rd@db/x"
    message = f"Port must be an integer: {url}"
    assert scrub(message, url) == "Port must be an integer: mongodb://trellis:***@db/x"


def test_a_message_quoting_a_user_name_written_alone_is_scrubbed() -> None:
    url = "mongodb://t%40ken@db/x"
    message = "cannot reach mongodb://t%40ken@db/x (as t@ken@db)"
    assert scrub(message, url) == "cannot reach mongodb://***@db/x (as ***@db)"
