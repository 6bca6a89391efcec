"""Bearer tokens: verified with PyJWT (HS256 with a shared secret, RS256/ES256 from a JWKS).

Every failure is `NotAuthenticated` with a message saying what was wrong; the token itself
is never quoted, logged or kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from app.auth.caller import Caller
from app.auth.subject import display_name, unnameable
from app.auth.token_rules import HMAC_ALGORITHM, TokenSettingsError, check_jwt_secret
from app.errors import NotAuthenticated, ServiceUnavailable

KEY_SET_ALGORITHMS = frozenset({"RS256", "ES256"})
# The claims that are times (RFC 7519 NumericDate: a JSON number).
TIME_CLAIMS = ("exp", "nbf", "iat")
# Clock skew forgiven on `exp`, `nbf` and `iat`.
LEEWAY_SECONDS = 30
# How long a fetched key set is trusted before it is fetched again (an unknown `kid`
# fetches it again, KEY_SET_REFETCH_SECONDS apart at most).
KEY_SET_LIFESPAN_SECONDS = 300
KEY_SET_TIMEOUT_SECONDS = 5
# A token naming a key the cached set lacks fetches the set again, at most this often
# (PyJWT's default, 30 s from every fetch, refused a key rotated in for up to 30 s; and
# a stranger's made-up `kid` cannot make it fetch more often than this).
KEY_SET_REFETCH_SECONDS = 5


@dataclass(frozen=True)
class ClaimNames:
    scopes: str = "scope"
    roles: str = "roles"
    name: str = "name"


class TokenVerifier:
    """Turns a bearer token into a Caller, or raises NotAuthenticated."""

    def __init__(
        self,
        *,
        secret: str | None = None,
        jwks_url: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        claims: ClaimNames = ClaimNames(),
    ) -> None:
        if not secret and not jwks_url:
            raise TokenSettingsError(
                "TRELLIS_AUTH_MODE=jwt needs TRELLIS_JWT_SECRET (HS256) or "
                "TRELLIS_JWT_JWKS_URL (RS256/ES256 keys of your identity provider)"
            )
        if secret:
            check_jwt_secret(secret)
        self._secret = secret
        self._key_set = (
            jwt.PyJWKClient(
                jwks_url,
                cache_jwk_set=True,
                lifespan=KEY_SET_LIFESPAN_SECONDS,
                timeout=KEY_SET_TIMEOUT_SECONDS,
                cooldown_duration=KEY_SET_REFETCH_SECONDS,
            )
            if jwks_url
            else None
        )
        self._issuer = issuer
        self._audience = audience
        self._claims = claims

    def __repr__(self) -> str:
        return f"TokenVerifier(hs256={self._secret is not None}, jwks={self._key_set is not None})"

    async def caller(self, token: str) -> Caller:
        """The verified caller of `token`."""
        claims = self._decode(token, await self._key_for(token))
        return self._caller_of(claims)

    async def _key_for(self, token: str) -> Any:
        try:
            algorithm = jwt.get_unverified_header(token).get("alg")
        except jwt.InvalidTokenError:
            raise NotAuthenticated("Malformed bearer token: not a JWT") from None
        if not isinstance(algorithm, str):
            # A header is the caller's JSON: `alg` may be a list or an object (unhashable).
            raise NotAuthenticated("Malformed bearer token: its header names no algorithm")
        if algorithm == HMAC_ALGORITHM and self._secret:
            return self._secret
        if algorithm in KEY_SET_ALGORITHMS and self._key_set is not None:
            return await self._key_from_set(token)
        raise NotAuthenticated(f"Token signing algorithm {algorithm!r} is not accepted")

    async def _key_from_set(self, token: str) -> Any:
        assert self._key_set is not None
        try:
            # PyJWKClient fetches with urllib: off the event loop.
            signing_key = await asyncio.to_thread(self._key_set.get_signing_key_from_jwt, token)
        except jwt.PyJWKClientConnectionError:
            raise ServiceUnavailable("The identity provider's key set cannot be fetched") from None
        except (jwt.PyJWKClientError, jwt.InvalidTokenError):
            raise NotAuthenticated("Token is signed with a key the key set does not have") from None
        # The key itself (PyJWK), not its raw key: PyJWT then refuses a token whose `alg`
        # is not the key's (an RS256 token naming an EC key's `kid` was a 500).
        return signing_key

    def _decode(self, token: str, key: Any) -> dict[str, Any]:
        algorithm = jwt.get_unverified_header(token)["alg"]
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                issuer=self._issuer,
                audience=self._audience,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "sub"], "verify_aud": self._audience is not None},
            )
        except jwt.InvalidTokenError as exc:
            raise NotAuthenticated(_reason(exc)) from None
        for name in TIME_CLAIMS:
            # PyJWT takes any value int() takes ("exp": "1999999999"); RFC 7519 says a
            # NumericDate is a JSON number, and another issuer's reading may differ.
            value = claims.get(name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise NotAuthenticated(f"Token's {name!r} claim is not a number (a NumericDate)")
        return claims

    def _caller_of(self, claims: dict[str, Any]) -> Caller:
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub.strip():
            raise NotAuthenticated("Token has no usable 'sub' claim")
        if odd := unnameable(sub):
            raise NotAuthenticated(
                f"Token's 'sub' {odd}, which no grant or approver list could name"
            )
        issued = claims.get("iat")
        return Caller(
            sub=sub,
            username=display_name(claim(claims, self._claims.name)),
            scopes=frozenset(words(claim(claims, self._claims.scopes))),
            roles=frozenset(words(claim(claims, self._claims.roles))),
            authenticated_at=int(issued) if isinstance(issued, (int, float)) else None,
            # Required, and PyJWT has checked that int() takes it.
            expires_at=int(claims["exp"]),
        )


_REASONS: list[tuple[type[jwt.InvalidTokenError], Callable[[Any], str]]] = [
    (jwt.ExpiredSignatureError, lambda e: "Token expired"),
    (jwt.InvalidSignatureError, lambda e: "Token signature is invalid"),
    (jwt.InvalidAudienceError, lambda e: "Token audience is not accepted"),
    (jwt.InvalidIssuerError, lambda e: "Token issuer is not accepted"),
    (jwt.ImmatureSignatureError, lambda e: "Token is not valid yet"),
    (jwt.MissingRequiredClaimError, lambda e: f"Token has no {e.claim!r} claim"),
    (jwt.InvalidAlgorithmError, lambda e: "Token signing algorithm does not match its key"),
    (jwt.DecodeError, lambda e: "Malformed bearer token"),
]


def _reason(exc: jwt.InvalidTokenError) -> str:
    for kind, say in _REASONS:
        if isinstance(exc, kind):
            return say(exc)
    return "Token is not valid"


def claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by name, or by a dotted path into nested objects (`realm_access.roles`)."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def words(value: Any) -> list[str]:
    """Scopes or roles from a claim: a string of them separated by spaces (U+0020 only, as
    RFC 6749 separates scopes: `str.split()` took a no-break space or a line separator
    for one, so `workflows-read\u00a0workflows-control` held the control scope), or a
    list of strings."""
    if isinstance(value, str):
        return [word for word in value.split(" ") if word]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []
