"""The one dependency every route goes through: who calls, and the scope the route needs.

Each route declares its rule with `needs(scope, permission)`; `check_routes` refuses to
build an app with a route that declares none (besides the probes), so a new route cannot
be left open by forgetting. The permission is what the caller must hold on the workflow
in the path (`app/deps.py` checks it where it looks the workflow up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, Security
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from activities.store.access import Permission
from app.auth.caller import ALL_SCOPES, DEV_CALLER, Caller
from app.auth.tokens import ClaimNames, TokenVerifier
from app.errors import Forbidden, NotAuthenticated
from app.settings import Settings

# Open to anyone: the probes and the Prometheus metrics (scrapers carry no user's token;
# docs/operations.md says what /metrics holds), and /docs, /openapi.json (not API routes).
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


class SingleBearer(HTTPBearer):
    """HTTPBearer that refuses a request with more than one `Authorization` header.

    Authorization is a singleton field (RFC 9110): HTTPBearer reads only the first, while a
    proxy in front may have judged the request by another, so two are refused, not picked
    from (in `jwt` mode; `dev` mode ignores tokens).
    """

    async def __call__(self, request: HTTPConnection) -> HTTPAuthorizationCredentials | None:
        if len(request.headers.getlist("authorization")) > 1:
            authenticator: Authenticator = request.app.state.authenticator
            if authenticator.verifier is not None:
                raise NotAuthenticated("Malformed credentials: more than one Authorization header")
        return await super().__call__(request)


bearer = SingleBearer(
    scheme_name="bearerAuth",
    bearerFormat="JWT",
    description="A JWT from your identity provider, or from `trellis token` (HS256).",
    auto_error=False,
)


class Authenticator:
    """Resolves the caller of a request: the dev admin, or a verified bearer token."""

    def __init__(self, verifier: TokenVerifier | None) -> None:
        self.verifier = verifier

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        """`dev` mode needs nothing; `jwt` mode a secret or a key set (TokenSettingsError)."""
        if settings.auth_mode == "dev":
            return cls(None)
        secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else None
        return cls(
            TokenVerifier(
                secret=secret,
                jwks_url=settings.jwt_jwks_url,
                issuer=settings.jwt_issuer,
                audience=settings.jwt_audience,
                claims=ClaimNames(
                    scopes=settings.jwt_scopes_claim,
                    roles=settings.jwt_roles_claim,
                    name=settings.jwt_name_claim,
                ),
            )
        )

    async def caller(self, credentials: HTTPAuthorizationCredentials | None) -> Caller:
        if self.verifier is None:
            return DEV_CALLER
        if credentials is None:
            raise NotAuthenticated("Authentication required: send 'Authorization: Bearer <token>'")
        return await self.verifier.caller(credentials.credentials)


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Caller:
    """The caller of this request (verified once per request)."""
    known: Caller | None = getattr(request.state, "caller", None)
    if known is None:
        authenticator: Authenticator = request.app.state.authenticator
        known = await authenticator.caller(credentials)
        request.state.caller = known
    return known


CallerDep = Annotated[Caller, Depends(authenticate)]


@dataclass(frozen=True)
class Rule:
    """What a route needs: a scope, and a permission on the workflow in its path (if any).

    `also` is a second scope, for a change that starts runs by itself later (a schedule
    that fires): starting runs needs `workflows-control` however it is asked for."""

    scope: str
    permission: Permission = "VIEW"
    also: str | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        return (self.scope,) if self.also is None else (self.scope, self.also)


class Guard:
    """The declared rule of one route, checked on every request to it."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    async def __call__(self, request: Request, caller: CallerDep) -> None:
        # Route-level dependencies are solved before the endpoint's parameters, so the
        # workflow lookup (app/deps.py) finds the permission this route needs here.
        request.state.rule = self.rule
        for scope in self.rule.scopes:
            if not caller.has_scope(scope):
                raise Forbidden(
                    f"This request needs the scope {scope!r}; the token grants "
                    f"{', '.join(sorted(caller.scopes)) or 'no scopes'}"
                )


def needs(scope: str, permission: Permission = "VIEW", also: str | None = None) -> Any:
    """Declare a route's rule (`dependencies=[needs(READ)]`); OpenAPI shows the scopes."""
    rule = Rule(scope, permission, also)
    for each in rule.scopes:
        if each not in ALL_SCOPES:
            raise ValueError(f"unknown scope {each!r}")
    return Security(Guard(rule), scopes=list(rule.scopes))


async def caller_before_body(request: Request) -> None:
    """Who calls and the route's scope, for a request FastAPI refused before its guard ran.

    FastAPI decodes a JSON body before it solves any dependency, so a malformed body was
    answered 400 to a caller without a token. Raises what the guard would (401, 403).
    """
    rule = rule_of(request.scope.get("route"))
    if rule is None:  # a probe, /docs: open to anyone
        return
    caller = await authenticate(request, await bearer(request))
    await Guard(rule)(request, caller)


def request_rule(request: Request) -> Rule | None:
    """The rule of the route serving `request` (set by its guard)."""
    return getattr(request.state, "rule", None)


def rule_of(route: Any) -> Rule | None:
    """The rule a route declared with `needs`, if any."""
    for dependency in getattr(route, "dependencies", None) or []:
        if isinstance(dependency.dependency, Guard):
            return dependency.dependency.rule
    return None


def api_routes(app: FastAPI) -> list[Any]:
    """Every API route of the app as served (with the prefixes of its routers)."""
    return [
        context
        for context in iter_route_contexts(app.routes)
        if isinstance(context.original_route, APIRoute)
    ]


def undeclared_routes(app: FastAPI) -> list[str]:
    """`METHOD path` of every API route that declares no rule and is not a probe."""
    return [
        f"{','.join(sorted(route.methods or ()))} {route.path}"
        for route in api_routes(app)
        if route.path not in PUBLIC_PATHS and rule_of(route) is None
    ]


def check_routes(app: FastAPI) -> None:
    """Refuse an app with a route nobody declared a scope for (it would be open to all)."""
    missing = undeclared_routes(app)
    if missing:
        raise RuntimeError(f"routes without a declared scope: {'; '.join(missing)}")
