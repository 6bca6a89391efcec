"""Tokens for tests of `jwt` mode: an HS256 secret, RS256/ES256 keys served as a JWKS by a
real local HTTP server, and an API app in `jwt` mode over real HTTP."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from temporalio.client import Client

from activities.executors.catalog import Catalog
from activities.executors.tls import default_tls
from activities.store.base import Store
from app.auth.caller import ALL_SCOPES
from app.main import create_app
from app.settings import Settings
from app.temporal import with_pydantic
from tests.support.server import serving

SECRET = "trellis-test-jwt-secret-0123456789abcdef"
OTHER_SECRET = "someone-elses-secret-0123456789abcdefgh"
AUDIENCE = "trellis-api"
ISSUER = "https://idp.test"


def jwt_settings(data_dir: Path, **extra: Any) -> Settings:
    """`jwt` mode with the test secret (audience and issuer only when given)."""
    extra.setdefault("jwt_secret", SecretStr(SECRET))
    return Settings(data_dir=data_dir, auth_mode="jwt", **extra)


def token(
    sub: str,
    scopes: Sequence[str] = ALL_SCOPES,
    /,
    *,
    roles: Sequence[str] = (),
    expires_in: float = 600,
    key: Any = SECRET,
    algorithm: str = "HS256",
    headers: dict[str, Any] | None = None,
    **claims: Any,
) -> str:
    """A signed token for `sub` (extra claims as given; None drops a claim)."""
    now = int(time.time())
    body: dict[str, Any] = {
        "sub": sub,
        "iat": now,
        "exp": now + int(expires_in),
        "jti": str(uuid.uuid4()),
        "scope": " ".join(scopes),
        "roles": list(roles),
        **claims,
    }
    body = {k: v for k, v in body.items() if v is not None}
    return jwt.encode(body, key, algorithm=algorithm, headers=headers)


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


# Long enough to outlive any test session: tests mint tokens at import, and a suite on a
# loaded machine ran past ten minutes ("Token expired" in 27 tests of a 20-minute run).
SESSION_TOKEN_SECONDS = 6 * 3600


def as_user(sub: str, scopes: Sequence[str] = ALL_SCOPES, **kw: Any) -> dict[str, str]:
    """Headers of a request by `sub` with `scopes`, valid for the whole session unless
    `expires_in` says otherwise."""
    kw.setdefault("expires_in", SESSION_TOKEN_SECONDS)
    return bearer(token(sub, scopes, **kw))


class KeySet:
    """An RSA and an EC signing key, and the JWKS document of their public halves."""

    def __init__(self) -> None:
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.served = 0
        # RSA keys published later, by kid (an identity provider rotating its keys).
        self.rotated: dict[str, rsa.RSAPrivateKey] = {}

    def document(self) -> dict[str, Any]:
        keys = []
        for kid, algorithm, key in (
            ("rsa-1", jwt.algorithms.RSAAlgorithm, self.rsa),
            ("ec-1", jwt.algorithms.ECAlgorithm, self.ec),
        ):
            jwk = json.loads(algorithm.to_jwk(key.public_key()))
            keys.append({**jwk, "kid": kid, "use": "sig"})
        for kid, later in self.rotated.items():
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(later.public_key()))
            keys.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": keys}

    def rotate(self, kid: str) -> str:
        """Publish a new RSA key as `kid`; a signer of tokens with it."""
        self.rotated[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return kid

    def rs256(self, sub: str, scopes: Sequence[str] = ALL_SCOPES, **kw: Any) -> str:
        return token(sub, scopes, key=self.rsa, algorithm="RS256", headers={"kid": "rsa-1"}, **kw)

    def es256(self, sub: str, scopes: Sequence[str] = ALL_SCOPES, **kw: Any) -> str:
        return token(sub, scopes, key=self.ec, algorithm="ES256", headers={"kid": "ec-1"}, **kw)

    @asynccontextmanager
    async def served_at(self) -> AsyncIterator[str]:
        """Serve the JWKS document over HTTP on loopback; yield its URL."""

        async def jwks(_: Request) -> JSONResponse:
            self.served += 1
            return JSONResponse(self.document())

        async with serving(Starlette(routes=[Route("/jwks.json", jwks)])) as base:
            yield f"{base}/jwks.json"


@asynccontextmanager
async def serve_api(
    settings: Settings, store: Store, catalog: Catalog, temporal: Client
) -> AsyncIterator[httpx.AsyncClient]:
    """The real app in the given mode, over HTTP, and a client for it (no default token)."""
    app = create_app(
        settings, store=store, temporal=with_pydantic(temporal, store, settings), catalog=catalog
    )
    async with (
        serving(app) as base_url,
        httpx.AsyncClient(base_url=base_url, verify=default_tls()) as http,
    ):
        yield http


# Alice with every scope, minted once at import, so it outlives any test session.
ALICE_TOKEN = token("alice", name="Alice", expires_in=SESSION_TOKEN_SECONDS)
ALICE_HEADERS = bearer(ALICE_TOKEN)
