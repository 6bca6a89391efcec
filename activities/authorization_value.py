"""An `Authorization` (or `Proxy-Authorization`) value in free text, masked
(activities/secret_text.py): a known scheme is kept, since it says which credential it
was, and what follows it masked; other words after the name are a sentence
(`authorization: denied for role:ops`) unless one looks like a credential.
"""

from __future__ import annotations

import re

from activities.executors.url_mask import MASK

_AUTHORIZATION = r"(?:proxy[-_]?)?authori[sz]ation"
# The schemes HTTP registers (IANA) and those services use; any other word is no scheme
# (`Authorization: Invalid token`).
_SCHEMES = (
    r"AWS4-HMAC-SHA256|SCRAM-SHA-256|SCRAM-SHA-1|Bearer|Basic|Token|Digest|ApiKey|Api-Key"
    r"|Negotiate|NTLM|Kerberos|HOBA|Mutual|DPoP|GNAP|OAuth|PrivateToken|Concealed|vapid"
    r"|Hawk|SharedKey|SSWS|GoogleLogin|JWT|Key"
)
_TOKEN = r"[^\s&\"',;}]+"
# Digest's and AWS's `name=value, name="value"` list, up to its last pair (a `;` inside a
# value is the value's: AWS's `SignedHeaders=host;range`).
_PARAMS = r"[\w-]+=(?:\"[^\"]*\"|[^\s,\"]*)(?:\s*,\s*[\w-]+=(?:\"[^\"]*\"|[^\s,\"]*))*"

_AUTHORIZATION_VALUE = re.compile(
    rf"(?i)\b({_AUTHORIZATION}[\"']?\s*[=:]\s*)(?:"
    # A quoted value is the header's whole value, up to its closing quote.
    rf"(?P<quote>[\"'])(?:(?P<quoted_scheme>{_SCHEMES})\s+)?(?:\\.|(?!(?P=quote))[^\\\n])+(?P=quote)"
    rf"|(?P<scheme>{_SCHEMES})\s+(?:{_PARAMS}|{_TOKEN})"
    rf"|(?P<first>{_TOKEN})(?:(?P<gap>[ \t]+)(?P<second>{_TOKEN}))?)"
)
# An opaque credential: token68's characters (RFC 9110), with a digit or long.
_CREDENTIAL_LIKE = re.compile(r"[A-Za-z0-9._~+/=-]{6,}")


def _looks_like_credential(word: str) -> bool:
    return bool(_CREDENTIAL_LIKE.fullmatch(word)) and (
        any(c.isdigit() for c in word) or len(word) >= 24
    )


def _masked(found: re.Match[str]) -> str:
    head = found.group(1)
    if quote := found.group("quote"):
        scheme = found.group("quoted_scheme")
        return f"{head}{quote}{scheme + ' ' if scheme else ''}{MASK}{quote}"
    if scheme := found.group("scheme"):
        return f"{head}{scheme} {MASK}"
    first, gap, second = found.group("first", "gap", "second")
    if second is None or _looks_like_credential(first):
        # One word alone is the value (`Authorization: s3cr3tvalue`).
        return f"{head}{MASK}{gap or ''}{second or ''}"
    if _looks_like_credential(second):
        return f"{head}{first}{gap}{MASK}"  # an unlisted scheme, then its credential
    return found.group(0)


def authorization_masked(text: str) -> str:
    """`text` with each `Authorization` value's credential masked."""
    return _AUTHORIZATION_VALUE.sub(_masked, text)
