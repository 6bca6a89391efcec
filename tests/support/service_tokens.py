"""The service-token signer the test workers use, and how a test peer would check a token."""

from __future__ import annotations

from typing import Any

import jwt

from activities.executors.service_token import ServiceTokenSigner

KEY = "trellis-test-service-token-key-0123456789"
AUDIENCE = "trellis-test-peers"
TTL_SECONDS = 120
SIGNER = ServiceTokenSigner(key=KEY, audience=AUDIENCE, ttl_seconds=TTL_SECONDS)


def verified(header: str | None) -> dict[str, Any]:
    """The claims of an `Authorization: Bearer …` value, verified as a downstream would."""
    assert header is not None and header.startswith("Bearer "), header
    claims: dict[str, Any] = jwt.decode(
        header.removeprefix("Bearer "),
        KEY,
        algorithms=["HS256"],
        audience=AUDIENCE,
        issuer="trellis",
        options={"require": ["exp", "iat", "sub", "jti"]},
    )
    return claims
