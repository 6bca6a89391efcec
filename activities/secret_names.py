"""Which names, in free text, say their value is a credential (activities/secret_text.py):
`SECRET_KEY`, `AWS_SECRET_ACCESS_KEY`, `clientSecret`, `private-key`, `db_password`; not
`max_tokens`, `prompt_tokens` or `token_count` (a model's token counts fill our logs), nor
`keyboard` or `monkey`.
"""

from __future__ import annotations

import re

# A name's last word that is a credential, or ends one written as a single word
# (`dbpassword`, `apitoken`). Plurals are not: `tokens` are counted, not sent.
_CREDENTIAL_ENDINGS = (
    "token", "secret", "password", "passwd", "passphrase", "credential", "credentials",
)  # fmt: skip
# "key" alone names anything (a dict's, a cache's); these words before it make it a
# credential: `api_key`, `SECRET_KEY`, `privateKey`, `AWS_SECRET_ACCESS_KEY`.
_KEY_KINDS = frozenset(
    {"api", "private", "access", "secret", "signing", "encryption", "master", "client", "auth"}
)
# Trailing words that still name the credential itself: `password_hash`, `token_value`.
_SAME_VALUE = frozenset({"value", "hash", "b64", "base64", "hex", "raw"})

_SEPARATORS = re.compile(r"[-_]+")


def _words(name: str) -> list[str]:
    """`name`'s words, split at `-`, `_` and camelCase (`APIKey` is `API`, `Key`)."""
    words: list[str] = []
    for part in _SEPARATORS.split(name):
        start = 0
        for i in range(1, len(part)):
            before, char, after = part[i - 1], part[i], part[i + 1 : i + 2]
            lower_to_upper = char.isupper() and (before.islower() or before.isdigit())
            acronym_end = char.isupper() and before.isupper() and after.islower()
            if lower_to_upper or acronym_end:
                words.append(part[start:i])
                start = i
        words.append(part[start:])
    return [word.casefold() for word in words if word]


def is_credential_name(name: str) -> bool:
    """Whether a value written after `name` (`name=v`, `name: v`) is a credential."""
    words = _words(name)
    while len(words) > 1 and words[-1] in _SAME_VALUE:
        words.pop()
    if not words:
        return False
    last = words[-1]
    if last.endswith(_CREDENTIAL_ENDINGS):
        return True
    if last in ("key", "keys"):
        return len(words) > 1 and words[-2] in _KEY_KINDS
    return last.endswith("key") and last[:-3] in _KEY_KINDS
