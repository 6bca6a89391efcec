"""The masks of free text (activities/secret_text.py) on the names, quotes and
`Authorization` values a review found them wrong on."""

from __future__ import annotations

import pytest

from activities.secret_text import scrub_secrets

# A name of several words, one of them a credential's (found by a review: only a name
# ending in `token`, `secret`, `password` or `api-key` right before `=` was masked).
CREDENTIAL_NAMES = [
    ("SECRET_KEY=abc", "SECRET_KEY=***"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY=***"),
    ("secretKey=abc def", "secretKey=*** def"),
    ("private_key: abc", "private_key: ***"),
    ("client_secret=abc&x=1", "client_secret=***&x=1"),
    ("APIKey: abc", "APIKey: ***"),
    ("refreshToken=abc", "refreshToken=***"),
    ("--db-password=hunter2 given", "--db-password=*** given"),
    ("GOOGLE_CREDENTIALS=abc", "GOOGLE_CREDENTIALS=***"),
    ("password_hash: abc", "password_hash: ***"),
]

# Counts and ordinary words that hold a credential's word but name no credential.
ORDINARY_NAMES = [
    "max_tokens=100",
    "prompt_tokens: 12",
    "tokens_used=5",
    "token_count=3",
    "maxTokens: 100",
    "token_type=Bearer",
    "keyboard: qwerty",
    "monkey=banana",
    "primary_key=id",
    "secret_name: db",
]


@pytest.mark.parametrize(
    ("line", "shown"), CREDENTIAL_NAMES + [(line, line) for line in ORDINARY_NAMES]
)
def test_a_name_is_masked_when_its_last_words_name_a_credential(line: str, shown: str) -> None:
    assert scrub_secrets(line) == shown


# A quoted value is masked up to its closing quote (found by a review: masking stopped at
# the first space, `"*** horse battery"`).
QUOTED = [
    ('{"password": "correct horse battery"}', '{"password": "***"}'),
    ("password='correct horse' rest", "password='***' rest"),
    ('"token": "a \\" b", "n": 1', '"token": "***", "n": 1'),
    ('{"authorization": "Custom s3cr3t c4red"}', '{"authorization": "***"}'),
    ('{"authorization": "Bearer s3cr3t c4red"}', '{"authorization": "Bearer ***"}'),
]


@pytest.mark.parametrize(("line", "shown"), QUOTED)
def test_a_quoted_value_is_masked_up_to_its_closing_quote(line: str, shown: str) -> None:
    assert scrub_secrets(line) == shown


# After `Authorization`, a word that is no scheme keeps the sentence readable (found by a
# review: `authorization: denied *** role:ops`); a value that looks like a credential, or
# is the whole value, is masked.
AUTHORIZATION = [
    ("authorization: denied for role:ops", "authorization: denied for role:ops"),
    ("Authorization: Invalid token", "Authorization: Invalid token"),
    ("Authorization: s3cr3tvalue", "Authorization: ***"),
    ("Authorization: opensesame", "Authorization: ***"),
    ("authorization=abc123 rejected", "authorization=*** rejected"),
    ("Authorization: Custom s3cr3t-c4red now", "Authorization: Custom *** now"),
    ("authorization: negotiate YIIabc", "authorization: negotiate ***"),
    ("Authorization: DPoP eyJ0eXAi", "Authorization: DPoP ***"),
    ("Authorization: NTLM TlRMTVNTUAAB", "Authorization: NTLM ***"),
]


@pytest.mark.parametrize(("line", "shown"), AUTHORIZATION)
def test_an_authorization_value_masks_only_its_credential(line: str, shown: str) -> None:
    assert scrub_secrets(line) == shown


@pytest.mark.parametrize(
    "line",
    [
        "Error executing tool get_token: connection refused",
        "Error executing tool rotate_api_key: upstream 502",
        "Unknown Tool reset_password: not listed",
    ],
)
def test_a_tools_name_before_its_error_is_no_credentials_name(line: str) -> None:
    # The MCP SDK's error words: a tool named for a credential kept its error's first word
    # masked ("get_token: *** refused"), now in a step's stored error too.
    assert scrub_secrets(line) == line


def test_a_credential_after_a_tools_name_is_still_masked() -> None:
    line = "Error executing tool get_token: upstream said token=abc123 Bearer eyJx.eyJy.z"
    shown = "Error executing tool get_token: upstream said token=*** Bearer ***"
    assert scrub_secrets(line) == shown
