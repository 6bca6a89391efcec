"""Every route, for every kind of caller: no token, an expired token, the wrong scope, the right
scope without the workflow permission, and the right scope with it (401/401/403/404|403/2xx).

The table below must name every route the app serves: a new route fails here until its
row says what it needs.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import load_catalog
from activities.executors.registry import ExecutorRegistry
from app.auth.caller import ALL_SCOPES, CONTROL, READ, SHARE, WRITE
from app.auth.guard import PUBLIC_PATHS, api_routes, rule_of
from app.main import create_app
from tests.api.helpers import API, assert_error
from tests.builders import echo
from tests.hitl.helpers import wait_for_gate
from tests.support.identity import ALICE_HEADERS, SECRET, as_user
from tests.support.loopback import LOOPBACK_ALLOWED
from tests.support.platform import Platform, running_platform

VIEWER = "viewer"  # holds VIEW on the world's workflows, nothing more
STRANGER = "mallory"  # holds nothing on them
SCHEDULE = {"intervalSeconds": 86_400, "paused": True}


@dataclass
class World:
    """Workflows, runs and a schedule owned by alice that every row can address."""

    p: Platform
    ids: dict[str, str] = field(default_factory=dict)

    async def gated_run(self, paused: bool = False) -> dict[str, str]:
        """A fresh run waiting at gate `gate` (paused if asked)."""
        run_id = await self.p.trigger(self.ids["gate_wf"])
        await wait_for_gate(self.p, self.ids["gate_wf"], run_id, "gate")
        if paused:
            response = await self.p.api.post(
                f"{API}/workflows/{self.ids['gate_wf']}/runs/{run_id}/pause"
            )
            assert response.status_code == 200, response.text
        return {"wf": self.ids["gate_wf"], "run": run_id}

    async def fresh_workflow(self) -> dict[str, str]:
        return {"wf": await self.p.create({"nodes": [echo("only")]}, enable=False)}

    async def fresh_schedule(self) -> dict[str, str]:
        wf = self.ids["wf"]
        response = await self.p.api.post(f"{API}/workflows/{wf}/schedules", json=SCHEDULE)
        assert response.status_code == 201, response.text
        return {"schedule": response.json()["id"]}


Fresh = Callable[[World], Awaitable[dict[str, str]]]


@dataclass(frozen=True)
class Row:
    method: str
    path: str  # the app's template, with {workflow_id} etc.
    ok: int
    body: Any = None
    # Resources the succeeding call uses instead of the world's (it changes or ends them).
    fresh: Fresh | None = None

    def url(self, ids: dict[str, str]) -> str:
        return (
            self.path.replace("{workflow_id}", ids.get("wf", ""))
            .replace("{run_id}", ids.get("run", ""))
            .replace("{node_run_id}", ids.get("node_run", ""))
            .replace("{node_id}", ids.get("node", ""))
            .replace("{schedule_id}", ids.get("schedule", ""))
            .replace("{version}", "1")
        )


WF = f"{API}/workflows/{{workflow_id}}"
RUN = f"{WF}/runs/{{run_id}}"
SCHED = f"{WF}/schedules/{{schedule_id}}"
ONE_STEP = {"nodes": [{"name": "s", "nodeType": "step", "executorKey": "builtin:echo"}]}


def _gate(w: World) -> Awaitable[dict[str, str]]:
    return w.gated_run()


def _paused(w: World) -> Awaitable[dict[str, str]]:
    return w.gated_run(paused=True)


def _cancelled(w: World) -> Awaitable[dict[str, str]]:
    async def ids() -> dict[str, str]:
        return {"wf": w.ids["gate_wf"], "run": w.ids["cancelled_run"]}

    return ids()


ROWS: list[Row] = [
    Row("GET", f"{API}/workflows", 200),
    Row("POST", f"{API}/workflows", 201, body=lambda: {"name": f"n-{uuid.uuid4()}", **ONE_STEP}),
    Row("GET", WF, 200),
    Row("PUT", WF, 200, body={"description": "changed"}),
    Row("DELETE", WF, 204, fresh=lambda w: w.fresh_workflow()),
    Row("POST", f"{WF}/toggle", 200, body={"enabled": True}),
    Row("GET", f"{WF}/versions", 200),
    Row("GET", f"{WF}/versions/{{version}}", 200),
    Row("GET", f"{WF}/graph", 200),
    Row("GET", f"{WF}/permissions", 200),
    Row("PUT", f"{WF}/permissions", 200,
        body={"grants": [{"principal": f"user:{VIEWER}", "permissions": ["VIEW"]}]}),
    Row("GET", f"{API}/servers", 200),
    Row("GET", f"{API}/agents", 200),
    Row("GET", f"{API}/approvals", 200),
    Row("GET", f"{API}/runs/{{run_id}}", 200),
    Row("POST", f"{WF}/runs", 202, body={}),
    Row("GET", f"{WF}/runs", 200),
    Row("GET", RUN, 200),
    Row("GET", f"{RUN}/children", 200),
    Row("GET", f"{RUN}/nodes", 200),
    Row("GET", f"{RUN}/nodes/{{node_run_id}}", 200),
    Row("GET", f"{RUN}/graph", 200),
    Row("GET", f"{RUN}/events", 200),
    Row("GET", f"{RUN}/requirements", 200),
    Row("POST", f"{RUN}/approve", 200, body={"stepId": "gate", "resolution": "confirm"},
        fresh=_gate),
    Row("POST", f"{RUN}/pause", 200, fresh=_gate),
    Row("POST", f"{RUN}/resume", 200, fresh=_paused),
    Row("POST", f"{RUN}/cancel", 200, fresh=_gate),
    Row("POST", f"{RUN}/retry", 200, fresh=_cancelled),
    Row("POST", f"{RUN}/nodes/{{node_id}}/rerun", 202),
    Row("POST", f"{RUN}/replay", 202),
    Row("POST", f"{WF}/schedules", 201, body=SCHEDULE),
    Row("GET", f"{WF}/schedules", 200),
    Row("GET", SCHED, 200),
    Row("PUT", SCHED, 200, body=SCHEDULE),
    Row("DELETE", SCHED, 204, fresh=lambda w: w.fresh_schedule()),
    Row("POST", f"{SCHED}/pause", 200),
    Row("POST", f"{SCHED}/unpause", 200),
    Row("POST", f"{SCHED}/trigger", 202),
    Row("GET", f"{SCHED}/skips", 200),
]  # fmt: skip
ROW_IDS = [f"{r.method} {r.path.removeprefix(API)}" for r in ROWS]


def under_a_workflow(path: str) -> bool:
    """Whether the route addresses something of one workflow (a run answers to its ACL)."""
    return "{workflow_id}" in path or "{run_id}" in path


def rule(row: Row) -> tuple[list[str], str]:
    """(scopes, permission) the app declares for the row's route."""
    app = create_app_once()
    for route in api_routes(app):
        if route.path == row.path and row.method in (route.methods or ()):
            declared = rule_of(route)
            assert declared is not None
            return list(declared.scopes), declared.permission
    raise AssertionError(f"no route {row.method} {row.path}")


_APP: list[Any] = []


def create_app_once() -> Any:
    if not _APP:
        from app.settings import Settings

        _APP.append(create_app(Settings()))
    return _APP[0]


def test_the_matrix_names_every_route() -> None:
    served = {
        (method, route.path)
        for route in api_routes(create_app_once())
        if route.path not in PUBLIC_PATHS
        for method in route.methods or ()
    }
    assert served == {(r.method, r.path) for r in ROWS}


@pytest.fixture(scope="module")
async def world(
    temporal_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    catalog = load_catalog(None)
    await catalog.start()
    registry = ExecutorRegistry(catalog, http_policy=LOOPBACK_ALLOWED)
    try:
        async with running_platform(
            temporal_env.client,
            tmp_path_factory.mktemp("matrix"),
            registry,
            settings_extra={"auth_mode": "jwt", "jwt_secret": SecretStr(SECRET)},
            headers=ALICE_HEADERS,
        ) as p:
            yield await _build(World(p))
    finally:
        await registry.close()
        await catalog.close()


async def _build(w: World) -> World:
    p = w.p
    w.ids["wf"] = await p.create({"nodes": [echo("only")]})
    w.ids["gate_wf"] = await p.create({"nodes": [echo("gate", {"requiresConfirmation": True})]})
    for wf in (w.ids["wf"], w.ids["gate_wf"]):
        grants = {"grants": [{"principal": f"user:{VIEWER}", "permissions": ["VIEW"]}]}
        assert (await p.api.put(f"{API}/workflows/{wf}/permissions", json=grants)).is_success
    w.ids["run"] = await p.trigger(w.ids["wf"])
    done = await p.wait(w.ids["wf"], w.ids["run"])
    w.ids["node_run"] = done["nodeRuns"][0]["id"]
    w.ids["node"] = "only"
    w.ids["schedule"] = (await w.fresh_schedule())["schedule"]
    cancelled = (await w.gated_run())["run"]
    assert (
        await p.api.post(f"{API}/workflows/{w.ids['gate_wf']}/runs/{cancelled}/cancel")
    ).is_success
    await p.wait(w.ids["gate_wf"], cancelled)
    w.ids["cancelled_run"] = cancelled
    return w


async def call(w: World, row: Row, ids: dict[str, str], headers: dict[str, str]) -> httpx.Response:
    body = row.body() if callable(row.body) else row.body
    return await w.p.api.request(row.method, row.url(ids), json=body, headers=headers, timeout=30)


def _ids_for(w: World, row: Row) -> dict[str, str]:
    """The world's ids, with the gate workflow's where the row's run must be gated."""
    ids = dict(w.ids)
    if row.fresh in (_gate, _paused, _cancelled):
        ids.update(wf=w.ids["gate_wf"], run=w.ids["cancelled_run"])
    return ids


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
async def test_no_token_is_401(world: World, row: Row) -> None:
    response = await call(world, row, _ids_for(world, row), {"Authorization": ""})
    assert_error(response, 401, "authentication_required")


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
async def test_an_expired_token_is_401(world: World, row: Row) -> None:
    headers = as_user("alice", expires_in=-3600)
    response = await call(world, row, _ids_for(world, row), headers)
    assert_error(response, 401, "authentication_required", "expired")


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
async def test_the_wrong_scope_is_403_naming_the_right_one(world: World, row: Row) -> None:
    scopes, _ = rule(row)
    for scope in scopes:
        # Every other scope, those the route also needs included: each one is needed.
        others = [s for s in ALL_SCOPES if s != scope]
        response = await call(world, row, _ids_for(world, row), as_user("alice", others))
        assert_error(response, 403, "forbidden", scope)


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
async def test_the_right_scope_without_the_permission(world: World, row: Row) -> None:
    scopes, permission = rule(row)
    ids = _ids_for(world, row)
    stranger = await call(world, row, ids, as_user(STRANGER, scopes))
    if not under_a_workflow(row.path):
        # No workflow to hold a permission on: served, counting only what they may see.
        assert stranger.status_code == row.ok, stranger.text
        if row.path == f"{API}/workflows" and row.method == "GET":
            assert stranger.json()["pagination"]["total"] == 0
        if row.path == f"{API}/approvals":
            assert stranger.json()["pagination"]["total"] == 0
        return
    assert_error(stranger, 404, "resource_not_found")
    if permission != "VIEW":
        viewer = await call(world, row, ids, as_user(VIEWER, scopes))
        assert_error(viewer, 403, "forbidden", permission)


@pytest.mark.parametrize("row", ROWS, ids=ROW_IDS)
async def test_the_right_scope_with_the_permission_succeeds(world: World, row: Row) -> None:
    scopes, _ = rule(row)
    ids = dict(world.ids)
    if row.fresh is not None:
        ids.update(await row.fresh(world))
    response = await call(world, row, ids, as_user("alice", scopes))
    assert response.status_code == row.ok, response.text


def test_the_scopes_are_the_documented_table() -> None:
    table = Path(__file__).resolve().parents[2] / "docs" / "security.md"
    text = table.read_text()
    for row in ROWS:
        scopes, permission = rule(row)
        on_workflow = permission if under_a_workflow(row.path) else "—"
        needed = " + ".join(f"`{s}`" for s in scopes)
        line = f"| `{row.method} {row.path.removeprefix(API)}` | {needed} | {on_workflow} |"
        assert line in text, line
    assert all(s in text for s in (READ, WRITE, CONTROL, SHARE))
