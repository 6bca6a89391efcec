"""Short-lived service tokens for the calls a run makes on behalf of the user who triggered it.

The run keeps who triggered it (`Identity`: never a token); while a step runs, the worker
mints a fresh JWT for every HTTP request it sends to an MCP server or an A2A agent, so a
step after a week-long approval carries a token minted seconds ago. A run without a
triggering identity (a schedule, dev mode) sends none. Only the MCP and A2A clients carry
the hook: `builtin:http` reaches arbitrary URLs and never gets a token. Claims and
lifetime: docs/security.md, "Downstream identity".
"""

from __future__ import annotations

import contextlib
import contextvars
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import jwt

from activities.executors.token_algorithms import HMAC_ALGORITHMS, KEY_ALGORITHMS, KEY_TYPES
from temporal_workflows.contracts import Identity

MIN_HMAC_KEY_BYTES = 32


class ServiceTokenError(ValueError):
    """Service-token settings that cannot sign (the message names the setting)."""


@dataclass(frozen=True)
class Caller:
    """Who a step's calls act for, and which step makes them."""

    identity: Identity
    run_id: str
    workflow_id: str
    node_id: str
    node_run_id: str
    attempt: int


@dataclass(frozen=True, repr=False)
class ServiceTokenSigner:
    """Mints the tokens: one signing key, the claims it vouches for, a short lifetime."""

    key: str
    algorithm: str = "HS256"
    issuer: str = "trellis"
    audience: str | None = None
    ttl_seconds: int = 300
    header: str = "Authorization"
    key_id: str | None = None
    # Where the key came from, as messages name it (the variable, or the file and its variable).
    key_source: str = "TRELLIS_SERVICE_TOKEN_KEY"

    def __post_init__(self) -> None:
        if self.algorithm in HMAC_ALGORITHMS:
            if len(self.key.encode()) < MIN_HMAC_KEY_BYTES:
                raise ServiceTokenError(
                    f"{self.key_source} must be at least {MIN_HMAC_KEY_BYTES} bytes "
                    f"for {self.algorithm}"
                )
        elif self.algorithm not in KEY_ALGORITHMS:
            known = ", ".join(HMAC_ALGORITHMS + KEY_ALGORITHMS)
            raise ServiceTokenError(
                f"TRELLIS_SERVICE_TOKEN_ALGORITHM {self.algorithm!r} is not one of {known}"
            )
        try:  # a key that does not fit its algorithm fails now, not on a step's first call
            self.mint(Caller(Identity(user_id="check"), "run", "wf", "node", "node-run", 1))
        except (jwt.PyJWTError, ValueError, TypeError):
            raise ServiceTokenError(self._unfit()) from None

    def _unfit(self) -> str:
        """Why the key cannot sign with the algorithm, from what the key is."""
        kind = private_key_kind(self.key)
        where = f"{self.key_source} cannot sign {self.algorithm} tokens"
        if self.algorithm in HMAC_ALGORITHMS:
            return f"{where}: it is {kind}, and {self.algorithm} signs with a shared secret"
        if kind is None:
            return f"{where}: it is no PEM private key (without a passphrase)"
        return f"{where}: it is {kind}, which does not fit {self.algorithm} ({KEY_TYPES})"

    def __repr__(self) -> str:  # the key never appears in a log line
        return f"ServiceTokenSigner(algorithm={self.algorithm!r}, issuer={self.issuer!r})"

    def claims(self, caller: Caller, now: float | None = None) -> dict[str, Any]:
        """The claims of a token minted now for `caller`."""
        issued = int(time.time() if now is None else now)
        identity = caller.identity
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": identity.user_id,
            "iat": issued,
            "nbf": issued,
            "exp": issued + self.ttl_seconds,
            "jti": uuid.uuid4().hex,
            "scope": " ".join(identity.scopes),
            "roles": list(identity.roles),
            "trellis": {
                "runId": caller.run_id,
                "workflowId": caller.workflow_id,
                "nodeId": caller.node_id,
                "nodeRunId": caller.node_run_id,
                "attempt": caller.attempt,
            },
        }
        if identity.username is not None:
            claims["name"] = identity.username
        if identity.authenticated_at is not None:
            claims["auth_time"] = identity.authenticated_at
        if self.audience is not None:
            claims["aud"] = self.audience
        return claims

    def mint(self, caller: Caller) -> str:
        headers = {"kid": self.key_id} if self.key_id else None
        return jwt.encode(self.claims(caller), self.key, self.algorithm, headers=headers)

    def header_for(self, caller: Caller) -> tuple[str, str]:
        """The request header carrying a fresh token (`Authorization: Bearer …` by default)."""
        token = self.mint(caller)
        return self.header, f"Bearer {token}" if self.header.lower() == "authorization" else token


def private_key_kind(key: str) -> str | None:
    """What a PEM private key is (`an RSA private key`, `an EC private key (secp384r1)`);
    None when `key` is no PEM private key that loads without a passphrase."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        loaded = load_pem_private_key(key.encode(), password=None)
    except (ValueError, TypeError):
        return None
    if isinstance(loaded, rsa.RSAPrivateKey):
        return "an RSA private key"
    if isinstance(loaded, ec.EllipticCurvePrivateKey):
        return f"an EC private key ({loaded.curve.name})"
    if isinstance(loaded, ed25519.Ed25519PrivateKey):
        return "an Ed25519 private key"
    if isinstance(loaded, ed448.Ed448PrivateKey):
        return "an Ed448 private key"
    return f"a {type(loaded).__name__}"


_CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "trellis_caller", default=None
)


@contextlib.contextmanager
def acting_for(caller: Caller | None) -> Iterator[None]:
    """Requests sent from this context (and tasks it starts) act for `caller` (None: nobody)."""
    token = _CALLER.set(caller)
    try:
        yield
    finally:
        _CALLER.reset(token)


Request = TypeVar("Request")


def service_token_auth(signer: ServiceTokenSigner | None) -> Callable[[Request], Request]:
    """An httpx / httpx2 `auth` function adding a fresh token to each request sent while a
    step acts for a caller, and nothing otherwise."""

    def auth(request: Request) -> Request:
        caller = _CALLER.get()
        if caller is not None and signer is not None:
            name, value = signer.header_for(caller)
            request.headers[name] = value  # type: ignore[attr-defined]
        return request

    return auth
