"""What text is a secret: the masks every line Trellis logs (app/logs.py) and every span it
exports (app/tracing.py) goes through, whoever wrote the text (a driver, a library, a
tool's error, us). URLs' user info is masked as activities/executors/url_mask.py masks it
everywhere else; a header whose name says it carries a credential is the same
vocabulary the catalog's secrets are found by (activities/executors/catalog_secrets.py),
whose values are masked wherever they appear (activities/known_secrets.py).
"""

from __future__ import annotations

import re

from activities.authorization_value import authorization_masked
from activities.executors.url_mask import MASK, quoted_urls_userinfo_masked
from activities.known_secrets import known_secrets_masked
from activities.secret_names import is_credential_name

# Header names that carry a credential, whatever else they are called around it: a
# catalog's header is known to be a header, so every such name counts.
CREDENTIAL_HEADER = re.compile(
    r"(?i)auth|token|key|secret|passw|cookie|session|signature|credential"
)

# A name is read as a whole, words joined by `-`, `_` or camelCase, and judged by
# activities/secret_names.py; it must be followed at once by `=` or `:` (a line says
# "token" and "secret" of other things).
_NAME = re.compile(r"(?<![\w-])[\w-]+(?=[\"']?\s*[=:])")
# Its value: a quoted one up to its closing quote (`"password": "correct horse battery"`),
# else up to a space or a delimiter, less the `)` or `]` closing the text around it
# (`(reason: token=abc)` lost its `)` to the mask).
_VALUE = re.compile(
    r"([\"']?\s*[=:]\s*)"
    r"(?:(?P<quote>[\"'])(?:\\.|(?!(?P=quote))[^\\\n])+(?P=quote)"
    r"|([\"']?)[^\s&\"',;}]+?(?=[)\]]*(?:[\s&\"',;}]|$)))"
)
_SCHEME_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")

# Every mask needs one of these in its match (case-folded, as `(?i)` and secret_names.py
# compare), so text with none of them is left as it is: looking for them costs ~1 µs, the
# masks ~25.
_CLUES = (
    "bearer", "basic", "eyj", "://", "token", "key", "secret", "passw", "passphrase",
    "credential", "authori",
)  # fmt: skip


def _named_values_masked(text: str) -> str:
    kept: list[str] = []
    done = 0
    for name in _NAME.finditer(text):
        if name.start() < done or not is_credential_name(name.group()):
            continue
        if text[max(0, name.start() - 5) : name.start()].casefold() == "tool ":
            # A tool's name, not a value's: the MCP SDK's "Error executing tool get_token:
            # connection refused" lost its first word to the mask.
            continue
        value = _VALUE.match(text, name.end())
        if value is None:
            continue
        quote = value.group("quote")
        shown = f"{quote}{MASK}{quote}" if quote else f"{value.group(3)}{MASK}"
        kept += [text[done : value.start()], value.group(1), shown]
        done = value.end()
    return "".join(kept) + text[done:] if kept else text


def masked(text: str) -> str:
    """`text` with every mask applied (no quick look first)."""
    return _patterns_masked(known_secrets_masked(text))


def _patterns_masked(text: str) -> str:
    text = _SCHEME_CREDENTIAL.sub(rf"\1 {MASK}", text)
    text = _JWT.sub(MASK, text)
    text = quoted_urls_userinfo_masked(text)
    text = authorization_masked(text)
    return _named_values_masked(text)


def scrub_secrets(text: str) -> str:
    """`text` with tokens, keys, credentials after an `Authorization` scheme and URL
    passwords masked, and every secret value the catalog gave (`known_secrets`): first,
    as one holding a space would be cut by the patterns (`password: ***` then the rest)."""
    text = known_secrets_masked(text)
    folded = text.casefold()
    if not any(clue in folded for clue in _CLUES):
        return text
    return _patterns_masked(text)


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
