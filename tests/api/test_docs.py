"""/docs over HTTP: Swagger UI from this origin's own files, under the console's page
policy (one hashed inline script, never framed, nosniff); no /redoc."""

from __future__ import annotations

import base64
import hashlib
import re

import httpx

from tests.api.helpers import assert_error

TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


def named_files(html: str) -> list[str]:
    """Every URL the page's tags load (`src`, `href`)."""
    return re.findall(r'(?:src|href)="([^"]*)"', html)


def policy(response: httpx.Response) -> dict[str, list[str]]:
    directives = response.headers["content-security-policy"].split(";")
    return {name: values for name, *values in (d.split() for d in directives if d.strip())}


def assert_kept_to_this_origin(response: httpx.Response) -> None:
    csp = policy(response)
    assert csp["default-src"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["connect-src"] == ["'self'"] and csp["style-src"] == ["'self'"]
    assert "unsafe" not in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


class TestPage:
    async def test_docs_names_only_files_of_this_origin(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        response = await shared_client.get("/docs")
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/html; charset=utf-8"
        files = named_files(response.text)
        assert "/docs/static/swagger-ui-bundle.js" in files
        assert "/docs/static/swagger-ui.css" in files
        assert all(url.startswith("/") and not url.startswith("//") for url in files), files
        assert "://" not in response.text

    async def test_every_file_the_page_names_answers_with_its_content_type(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        for url in named_files((await shared_client.get("/docs")).text):
            response = await shared_client.get(url)
            assert response.status_code == 200, url
            assert response.headers["content-type"] == TYPES[url[url.rindex(".") :]], url
            assert response.headers["x-content-type-options"] == "nosniff", url

    async def test_docs_runs_only_this_origins_scripts_and_its_own_inline_script(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        response = await shared_client.get("/docs")
        inline = re.findall(r"<script>(.*?)</script>", response.text, re.DOTALL)
        assert len(inline) == 1 and "SwaggerUIBundle(" in inline[0]
        digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
        assert policy(response)["script-src"] == ["'self'", f"'sha256-{digest}'"]
        assert_kept_to_this_origin(response)

    async def test_swagger_ui_sends_the_document_to_no_validator(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        page = (await shared_client.get("/docs")).text
        assert '"validatorUrl": null' in page


class TestFiles:
    async def test_swagger_files_carry_the_page_policy(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
            assert_kept_to_this_origin(await shared_client.get(f"/docs/static/{name}"))

    async def test_the_bundle_is_gzipped_and_revalidated(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        url = "/docs/static/swagger-ui-bundle.js"
        response = await shared_client.get(url, headers={"Accept-Encoding": "gzip"})
        assert response.headers["content-encoding"] == "gzip"
        assert int(response.headers["content-length"]) < len(response.content) / 2
        again = await shared_client.get(url, headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304

    async def test_any_other_name_is_a_404_with_the_error_body(
        self, shared_client: httpx.AsyncClient
    ) -> None:
        # LICENSE is in the same folder but is no file of the page.
        for name in ("nope.js", "LICENSE", "..%2F__init__.py", "swagger-ui.js"):
            response = await shared_client.get(f"/docs/static/{name}")
            assert_error(response, 404, "resource_not_found")


async def test_redoc_is_not_served(shared_client: httpx.AsyncClient) -> None:
    assert_error(await shared_client.get("/redoc"), 404, "resource_not_found")
