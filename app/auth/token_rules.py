"""What the token verifier and `trellis token` agree on: the HMAC algorithm, the secrets
either accepts, and the error for settings that cannot sign or verify.

Apart from the verifier, which raises the API's error types (and so imports the API's
stack): `trellis token` needs only these and PyJWT.
"""

from __future__ import annotations

from app.startup_failure import StartupFailure

HMAC_ALGORITHM = "HS256"
# An HS256 secret shorter than this is guessable offline from any token it signed.
MIN_SECRET_BYTES = 32


class TokenSettingsError(StartupFailure, ValueError):
    """Token settings that cannot sign or verify anything (the message names the setting)."""


# `.env.example`'s placeholders say "change-me": one left in place is a secret anyone who
# has read the repository knows, however long.
PLACEHOLDER_MARK = "change-me"


def check_jwt_secret(secret: str) -> None:
    """TokenSettingsError for a TRELLIS_JWT_SECRET nobody should sign with."""
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise TokenSettingsError(f"TRELLIS_JWT_SECRET must be at least {MIN_SECRET_BYTES} bytes")
    if PLACEHOLDER_MARK in secret.lower():
        raise TokenSettingsError(
            "TRELLIS_JWT_SECRET is still .env.example's placeholder; set random bytes of "
            "your own (e.g. `openssl rand -base64 48`)"
        )
