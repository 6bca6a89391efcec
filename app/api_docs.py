"""The API docs at /docs: Swagger UI from files installed with Trellis, never from a CDN.

/docs is on the console's origin, where a signed-in console keeps its token in the tab's
sessionStorage: any script that runs there can read it. So the page runs only scripts of
this origin, under the console's headers (app/web_assets.py): Swagger UI's own files
(swagger-ui-dist, unmodified, shipped by the fastapi-standalone-docs package) under
/docs/static/, and the page's one inline script, which starts Swagger UI, allowed by its
hash. It also works on a machine without the internet.

ReDoc (FastAPI's /redoc) is not served: it injects its styles inline at run time, which
this policy refuses, and one documentation page is enough.
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.errors import error_response
from app.web_assets import Asset, load_assets, make_asset, page_headers, serve_asset

DOCS_PATH = "/docs"
STATIC_PATH = f"{DOCS_PATH}/static"
# The package whose folder holds swagger-ui-dist's files (pyproject.toml bounds its
# version). Found, not imported: only its files are used, and its code is not run.
SWAGGER_PACKAGE = "fastapi_standalone_docs"
FAVICON_URL = "/console/assets/favicon.svg"
INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def swagger_dir() -> Path:
    spec = importlib.util.find_spec(SWAGGER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{SWAGGER_PACKAGE} is not installed (a dependency of Trellis)")
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "swagger"


@cache
def swagger_files() -> dict[str, Asset]:
    """Swagger UI's script and stylesheet, read and compressed once per process, when
    first asked for (1.5 MB compressed at level 9: not on every API start)."""
    return load_assets(swagger_dir())


def install_docs(app: FastAPI) -> None:
    """Serve /docs and its files (build the app with `docs_url=None, redoc_url=None`)."""
    if app.openapi_url is None:
        raise ValueError("/docs shows the OpenAPI document: the app must serve one")
    answer = get_swagger_ui_html(
        openapi_url=app.openapi_url,
        title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{STATIC_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{STATIC_PATH}/swagger-ui.css",
        swagger_favicon_url=FAVICON_URL,
        # No badge sending the document's URL to a public validator.
        swagger_ui_parameters={"validatorUrl": None},
    )
    html = bytes(answer.body)
    page = make_asset(html, "text/html; charset=utf-8")
    headers = page_headers(*INLINE_SCRIPT.findall(html.decode()))

    async def docs_page(request: Request) -> Response:
        return serve_asset(page, request, headers)

    async def docs_file(request: Request) -> Response:
        name = request.path_params["name"]
        asset = swagger_files().get(name)
        if asset is None:
            return error_response(404, "resource_not_found", f"Docs file {name[:100]!r} not found")
        return serve_asset(asset, request, headers)

    app.add_route(DOCS_PATH, docs_page, include_in_schema=False)
    # Any path under it is a name looked up in memory (never on disk), so every miss is the
    # one error body.
    files_app = Starlette(routes=[Route("/{name:path}", docs_file)])
    app.mount(STATIC_PATH, files_app, name="docs")
