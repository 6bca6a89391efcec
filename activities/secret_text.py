"""What text is a secret: the masks every line Trellis logs (app/logs.py) and every span it
exports (app/tracing.py) goes through, whoever wrote the text (a driver, a library, a
tool's error, us). URLs' user info is masked as activities/executors/url_mask.py masks it
everywhere else; a header whose name says it carries a credential is the same
vocabulary the catalog's secrets are found by (activities/executors/catalog_secrets.py).
"""

from __future__ import annotations

import re

from activities.executors.url_mask import MASK, quoted_urls_userinfo_masked

# Header names that carry a credential, whatever else they are called around it: a
# catalog's header is known to be a header, so every such name counts.
CREDENTIAL_HEADER = re.compile(
    r"(?i)auth|token|key|secret|passw|cookie|session|signature|credential"
)

# In free text a name is taken as a credential's only when it says so outright (a line says
# "key" and "session" of other things). `-`, `_` or nothing may join its words: `api-key`,
# `X-Api-Key`, `access_token`, `clientSecret`.
_NAMES = r"token|api[-_]?key|secret|password|passwd"
_AUTHORIZATION = r"(?:proxy[-_]?)?authori[sz]ation"
# Up to the value, as `name=v`, `name: v`, `"name": "v"` write it.
_BEFORE_VALUE = r"[\"']?\s*[=:]\s*[\"']?"
_TOKEN = r"[^\s&\"',;}]+"
# An `Authorization` value's scheme (`Bearer`, `Token`, `ApiKey`, `Digest`, …): a word of
# letters, kept, since it says which credential it was; what follows it is masked.
_SCHEME = r"AWS4-HMAC-SHA256|[A-Za-z]+(?:-[A-Za-z]+)*"
# Digest's and AWS's `name=value, name="value"` list, up to its last pair (a `;` inside a
# value is the value's: AWS's `SignedHeaders=host;range`).
_PARAMS = r"[\w-]+=(?:\"[^\"]*\"|[^\s,\"]*)(?:\s*,\s*[\w-]+=(?:\"[^\"]*\"|[^\s,\"]*))*"

_SCHEME_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_AUTHORIZATION_VALUE = re.compile(
    rf"(?i)\b({_AUTHORIZATION}{_BEFORE_VALUE})(?:({_SCHEME})\s+(?:{_PARAMS}|{_TOKEN})|{_TOKEN})"
)
_NAMED_VALUE = re.compile(rf"(?i)((?:{_NAMES}){_BEFORE_VALUE}){_TOKEN}")

# Every mask needs one of these in its match (case-folded, as `(?i)` compares), so text
# with none of them is left as it is: looking for them costs ~1 µs, the masks ~25.
_CLUES = ("bearer", "basic", "eyj", "://", "token", "key", "secret", "passw", "authori")


def _authorization(found: re.Match[str]) -> str:
    scheme = found.group(2)
    return f"{found.group(1)}{scheme} {MASK}" if scheme else f"{found.group(1)}{MASK}"


def masked(text: str) -> str:
    """`text` with every mask applied (no quick look first)."""
    text = _SCHEME_CREDENTIAL.sub(rf"\1 {MASK}", text)
    text = _JWT.sub(MASK, text)
    text = quoted_urls_userinfo_masked(text)
    text = _AUTHORIZATION_VALUE.sub(_authorization, text)
    return _NAMED_VALUE.sub(rf"\1{MASK}", text)


def scrub_secrets(text: str) -> str:
    """`text` with tokens, keys, credentials after an `Authorization` scheme and URL
    passwords masked."""
    folded = text.casefold()
    if not any(clue in folded for clue in _CLUES):
        return text
    return masked(text)


# A request's path and query as uvicorn logs them stay percent-encoded (and it encodes a
# path's `=` as %3D itself), so there a name, its `=` or the space after `Bearer` may be
# escaped: `?%74oken=…`, `/hooks/token%3D…`, `access%5Ftoken=…`.
_PATH_NAMES = (
    "token", "api_key", "api-key", "apikey", "secret", "password", "passwd", "authorization",
)  # fmt: skip


def _escapable(word: str) -> str:
    """A pattern for `word` with any of its characters possibly percent-encoded."""
    spelled = []
    for char in word:
        codes = {f"%{ord(c):02x}" for c in (char.lower(), char.upper())}
        spelled.append("(?:" + "|".join([re.escape(char), *sorted(codes)]) + ")")
    return "".join(spelled)


_ENCODED_SECRETS = (
    (re.compile(r"(?i)((?:bearer|basic)(?:%20|\+)+)[^\s/&;?#]+"), rf"\1{MASK}"),
    (
        re.compile(
            "(?i)((?:"
            + "|".join(_escapable(name) for name in _PATH_NAMES)
            + r")(?:=|%3d|:|%3a))[^\s/&;?#]+"
        ),
        rf"\1{MASK}",
    ),
)


def scrub_request_path(path: str) -> str:
    """A request's path and query as the access log shows them, with secrets masked: also
    those whose name or separator is percent-encoded."""
    if "%" in path or "+" in path:
        for pattern, replacement in _ENCODED_SECRETS:
            path = pattern.sub(replacement, path)
    return scrub_secrets(path)
