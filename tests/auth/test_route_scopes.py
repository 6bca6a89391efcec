"""Every route declares the scope it needs; an app with an undeclared route does not build."""

from __future__ import annotations

import httpx
import pytest
from fastapi import APIRouter, FastAPI

from app.auth.caller import ALL_SCOPES, READ, WRITE
from app.auth.guard import (
    PUBLIC_PATHS,
    api_routes,
    check_routes,
    needs,
    rule_of,
    undeclared_routes,
)
from app.main import create_app
from app.settings import Settings
from tests.api.helpers import API, assert_error
from tests.support.identity import as_user


def test_every_route_declares_a_scope_or_is_a_probe(settings: Settings) -> None:
    app = create_app(settings)
    routes = api_routes(app)
    assert len(routes) >= 39
    for route in routes:
        rule = rule_of(route)
        if route.path in PUBLIC_PATHS:
            assert rule is None, route.path
        else:
            assert rule is not None and rule.scope in ALL_SCOPES, (route.methods, route.path)
    assert undeclared_routes(app) == []


def test_a_route_without_a_scope_stops_the_app_being_built() -> None:
    app = FastAPI()
    router = APIRouter()

    @router.get("/declared", dependencies=[needs(READ)])
    async def declared() -> None: ...

    @router.post("/forgotten")
    async def forgotten() -> None: ...

    app.include_router(router, prefix=API)
    assert undeclared_routes(app) == [f"POST {API}/forgotten"]
    with pytest.raises(RuntimeError, match="forgotten"):
        check_routes(app)


def test_an_unknown_scope_cannot_be_declared() -> None:
    with pytest.raises(ValueError, match="workflows-admin"):
        needs("workflows-admin")


async def test_missing_scope_is_403_naming_it(api: httpx.AsyncClient) -> None:
    response = await api.post(f"{API}/workflows", json={}, headers=as_user("alice", [READ]))
    assert_error(response, 403, "forbidden", WRITE)
