"""The console as a small ASGI app mounted at /console: the page shell for every console path,
its files, and the platform facts it needs.

It is mounted beside the API, not part of it: it serves static files that hold no data, and
so stays out of the OpenAPI document and needs no scope. Every datum the console shows comes
from the REST API, called by the browser with the signed-in user's token, so the API's own
checks apply to everything a user sees and does.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.errors import error_response
from app.settings import Settings
from app.web_assets import load_assets, page_headers, serve_asset
from temporal_workflows.base import CamelModel
from temporal_workflows.read_model import OPEN_RUN_STATUSES, RUN_STATUSES, TERMINAL_RUN_STATUSES

STATIC_DIR = Path(__file__).parent / "static"
SHELL = "index.html"
# The console's own files and API only: no inline script or style; never framed.
SECURITY_HEADERS = page_headers()
# A script or a stylesheet is no document: browsers ignore a CSP on it (~200 bytes a
# file, about 3 KB of a first visit). The referrer policy stays: a module's imports follow
# the policy of the module's own answer. The SVG icon keeps the whole policy: opened on
# its own it is a document, and could run script.
SUBRESOURCE_HEADERS = {
    name: value for name, value in SECURITY_HEADERS.items() if name != "Content-Security-Policy"
}


class ConsoleConfig(CamelModel):
    """What the console needs to know about this platform (nothing secret)."""

    api_base: str
    # `dev`: no sign-in; `jwt`: a bearer token on every API call.
    auth_mode: str
    temporal_ui_url: str | None
    temporal_namespace: str
    run_statuses: list[str]
    open_run_statuses: list[str]
    terminal_run_statuses: list[str]
    # Where a token keeps its scopes (`jwt` mode): the console offers no control the
    # signed-in token's scopes could not use (the API refuses them anyway).
    scopes_claim: str


def console_app(settings: Settings, api_base: str) -> Starlette:
    """The console, with its files read once (mount it at /console)."""
    assets = load_assets(STATIC_DIR)
    config = ConsoleConfig(
        api_base=api_base,
        auth_mode=settings.auth_mode,
        temporal_ui_url=settings.resolved_temporal_ui_url,
        temporal_namespace=settings.temporal_namespace,
        run_statuses=list(RUN_STATUSES),
        open_run_statuses=list(OPEN_RUN_STATUSES),
        terminal_run_statuses=sorted(TERMINAL_RUN_STATUSES),
        scopes_claim=settings.jwt_scopes_claim,
    )
    config_body = config.model_dump(mode="json")

    async def console_config(request: Request) -> Response:
        return JSONResponse(config_body, headers={"Cache-Control": "no-cache"})

    async def console_asset(request: Request) -> Response:
        name = request.path_params["name"]
        asset = assets.get(name)
        if asset is None or name == SHELL:
            message = f"Console file {name[:100]!r} not found"
            return error_response(404, "resource_not_found", message)
        document = not name.endswith((".js", ".css"))
        return serve_asset(asset, request, SECURITY_HEADERS if document else SUBRESOURCE_HEADERS)

    async def console_page(request: Request) -> Response:
        # Every other path is a page: the console's own router draws what the path names.
        return serve_asset(assets[SHELL], request, SECURITY_HEADERS)

    return Starlette(
        routes=[
            Route("/config.json", console_config),
            Route("/assets/{name}", console_asset),
            Route("/{path:path}", console_page),
        ]
    )
