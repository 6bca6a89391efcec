"""The caller of a request: a verified token's subject, scopes and roles, or the dev admin."""

from __future__ import annotations

from dataclasses import dataclass, field

from temporal_workflows.contracts import Identity

READ = "workflows-read"
WRITE = "workflows-write"
CONTROL = "workflows-control"
SHARE = "workflows-share"
ALL_SCOPES = (READ, WRITE, CONTROL, SHARE)
# The one caller of `dev` mode (no token, loopback only).
DEV_USER = "dev"


def user_principal(sub: str) -> str:
    return f"user:{sub}"


def role_principal(role: str) -> str:
    return f"role:{role}"


@dataclass(frozen=True)
class Caller:
    """Who is calling. `admin` (dev mode only) may see and do everything."""

    sub: str
    username: str | None = None
    scopes: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    admin: bool = False
    # The token's `iat` (Unix seconds), when it had one.
    authenticated_at: int | None = None
    # The token's `exp` (Unix seconds); None for the dev admin, who has no token.
    expires_at: int | None = None
    # Whether a token proved who this is (False for the dev admin).
    verified: bool = True
    principals: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        principals = {user_principal(self.sub), *(role_principal(r) for r in self.roles)}
        object.__setattr__(self, "principals", frozenset(principals))

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def identity(self) -> Identity | None:
        """What a run records as its trigger: the verified identity (None in dev mode)."""
        if not self.verified:
            return None
        return Identity(
            user_id=self.sub,
            username=self.username,
            scopes=sorted(self.scopes),
            roles=sorted(self.roles),
            authenticated_at=self.authenticated_at,
        )


DEV_CALLER = Caller(
    sub=DEV_USER, username=DEV_USER, scopes=frozenset(ALL_SCOPES), admin=True, verified=False
)
