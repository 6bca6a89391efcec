"""The console over HTTP: the page shell, its files, its settings; none in the API schema."""

from __future__ import annotations

import gzip
import re

from app.console.routes import STATIC_DIR
from app.settings import Settings
from temporal_workflows.read_model import RUN_STATUSES
from tests.support.platform import Platform


class TestShell:
    async def test_every_console_path_serves_the_page_shell(self, platform: Platform) -> None:
        for path in ("/console/", "/console/approvals", "/console/workflows/wf-1/runs/run-1"):
            response = await platform.api.get(path)
            assert response.status_code == 200, path
            assert response.headers["content-type"] == "text/html; charset=utf-8"
            assert '<script type="module" src="/console/assets/app.js">' in response.text

    async def test_the_shell_allows_only_this_origins_scripts_and_no_framing(
        self, platform: Platform
    ) -> None:
        response = await platform.api.get("/console/approvals")
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "connect-src 'self'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"

    async def test_console_without_a_slash_redirects_to_it(self, platform: Platform) -> None:
        response = await platform.api.get("/console", follow_redirects=False)
        assert response.status_code == 307
        # A path, never the request's Host (Starlette's slash redirect echoed it).
        assert response.headers["location"] == "/console/"

    async def test_the_shell_preloads_every_module(self, platform: Platform) -> None:
        shell = (await platform.api.get("/console/")).text
        preloaded = set(re.findall(r'modulepreload" href="/console/assets/([\w.]+)"', shell))
        modules = {p.name for p in STATIC_DIR.glob("*.js")} - {"app.js"}
        assert preloaded == modules


class TestAssets:
    async def test_files_are_served_gzipped_with_an_etag_and_revalidated(
        self, platform: Platform
    ) -> None:
        raw = (STATIC_DIR / "app.js").read_bytes()
        response = await platform.api.get(
            "/console/assets/app.js", headers={"Accept-Encoding": "gzip"}
        )
        assert response.status_code == 200
        assert response.headers["content-encoding"] == "gzip"
        assert response.headers["content-type"] == "text/javascript; charset=utf-8"
        assert response.headers["cache-control"] == "no-cache"
        assert response.content == raw  # httpx decodes the gzip body
        assert int(response.headers["content-length"]) == len(gzip.compress(raw, 9, mtime=0))
        etag = response.headers["etag"]
        again = await platform.api.get("/console/assets/app.js", headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""

    async def test_files_are_nosniff_and_what_a_browser_can_open_as_a_page_has_the_policy(
        self, platform: Platform
    ) -> None:
        for name in ("app.js", "console.css", "favicon.svg"):
            response = await platform.api.get(f"/console/assets/{name}")
            assert response.status_code == 200, name
            assert response.headers["x-content-type-options"] == "nosniff", name
            assert response.headers["referrer-policy"] == "no-referrer", name
        # An SVG opened on its own is a document that could run script.
        icon = await platform.api.get("/console/assets/favicon.svg")
        assert "script-src 'self'" in icon.headers["content-security-policy"]

    async def test_a_client_without_gzip_gets_the_plain_file(self, platform: Platform) -> None:
        response = await platform.api.get(
            "/console/assets/console.css", headers={"Accept-Encoding": "identity"}
        )
        assert "content-encoding" not in response.headers
        assert response.content == (STATIC_DIR / "console.css").read_bytes()

    async def test_an_unknown_file_is_a_404_with_the_error_body(self, platform: Platform) -> None:
        for name in ("nope.js", "index.html", "assets.py"):
            response = await platform.api.get(f"/console/assets/{name}")
            assert response.status_code == 404, name
            assert response.json()["error"]["code"] == "resource_not_found"

    async def test_no_path_reaches_a_file_outside_the_console(self, platform: Platform) -> None:
        # Files are looked up by name in memory, never on disk: a dotted path is only a page.
        response = await platform.api.get("/console/assets/..%2Froutes.py")
        assert "console_router" not in response.text


class TestConfig:
    async def test_it_names_the_api_the_statuses_and_the_temporal_web_ui(
        self, platform: Platform
    ) -> None:
        config = (await platform.api.get("/console/config.json")).json()
        assert config["apiBase"] == "/api/v1"
        assert config["authMode"] == "dev"
        assert config["runStatuses"] == list(RUN_STATUSES)
        assert config["terminalRunStatuses"] == ["cancelled", "completed", "failed"]
        assert config["temporalUiUrl"] == "http://127.0.0.1:8233"
        assert config["temporalNamespace"] == "default"

    def test_the_web_ui_is_the_setting_or_the_embedded_dev_servers(self) -> None:
        assert Settings(ui_port=9999).resolved_temporal_ui_url == "http://127.0.0.1:9999"
        cluster = Settings(temporal_address="temporal.internal:7233")
        assert cluster.resolved_temporal_ui_url is None
        configured = Settings(temporal_address="t:7233", temporal_ui_url="https://ui.example/")
        assert configured.resolved_temporal_ui_url == "https://ui.example"


async def test_the_console_is_not_part_of_the_api_schema(platform: Platform) -> None:
    paths = (await platform.api.get("/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/console")]
