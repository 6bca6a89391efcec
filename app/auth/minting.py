"""`trellis token`: an HS256 token signed with TRELLIS_JWT_SECRET, for trying `jwt` mode
and for scripts. It carries the claims the API reads, under the configured claim names."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import jwt

from app.auth.token_rules import HMAC_ALGORITHM, TokenSettingsError, check_jwt_secret
from app.settings import Settings

DEFAULT_TTL_SECONDS = 3600


def mint_token(
    settings: Settings,
    *,
    sub: str,
    scopes: Sequence[str],
    roles: Sequence[str] = (),
    name: str | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    now: float | None = None,
) -> str:
    """A signed token for `sub`; TokenSettingsError without a usable secret."""
    if settings.jwt_secret is None:
        raise TokenSettingsError(
            "TRELLIS_JWT_SECRET is not set; `trellis token` signs with it (HS256)"
        )
    secret = settings.jwt_secret.get_secret_value()
    check_jwt_secret(secret)
    if not sub.strip():
        raise TokenSettingsError("--sub must not be empty")
    if ttl_seconds <= 0:
        raise TokenSettingsError("--ttl must be a positive number of seconds")
    issued = int(now if now is not None else time.time())
    claims: dict[str, Any] = {
        "sub": sub,
        "iat": issued,
        "exp": issued + ttl_seconds,
        "jti": str(uuid.uuid4()),
    }
    put_claim(claims, settings.jwt_scopes_claim, " ".join(scopes))
    if roles:
        put_claim(claims, settings.jwt_roles_claim, list(roles))
    if name is not None:
        put_claim(claims, settings.jwt_name_claim, name)
    if settings.jwt_issuer:
        claims["iss"] = settings.jwt_issuer
    if settings.jwt_audience:
        claims["aud"] = settings.jwt_audience
    return jwt.encode(claims, secret, algorithm=HMAC_ALGORITHM)


def put_claim(claims: dict[str, Any], path: str, value: Any) -> None:
    """Set a claim by name, or by a dotted path into nested objects."""
    *parents, last = path.split(".")
    target = claims
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value


def split_list(value: str | None) -> list[str]:
    """`a,b, c` → ["a", "b", "c"]."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]
