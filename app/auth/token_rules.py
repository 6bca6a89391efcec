"""What the token verifier and `trellis token` agree on: the HMAC algorithm, the shortest
secret either accepts, and the error for settings that cannot sign or verify.

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
