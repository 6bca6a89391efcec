"""Files a browser loads from this origin (the console, the API docs): read once, served
with a strong ETag and, to clients that accept it, gzip, under headers that keep a page to
this origin's own files.

The files are shipped in installed packages (nothing is built at run time), so holding them
in memory costs little. Every page of this origin gets the same policy: the console keeps a
token in the tab's sessionStorage, which any script running on this origin could read.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from app.routes.conditional import tag_matches

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    etag: str
    content_type: str


def make_asset(body: bytes, content_type: str) -> Asset:
    """One servable file: its bytes, a gzip copy and a strong ETag."""
    return Asset(
        body=body,
        # mtime=0: the same bytes on every start, so the ETag's meaning never drifts.
        gzipped=gzip.compress(body, compresslevel=9, mtime=0),
        etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
        content_type=content_type,
    )


def load_assets(directory: Path) -> dict[str, Asset]:
    """Every servable file of `directory` by name (no subdirectories: each set is flat)."""
    assets: dict[str, Asset] = {}
    for path in sorted(directory.iterdir()):
        content_type = CONTENT_TYPES.get(path.suffix)
        if content_type is None or not path.is_file():
            continue
        assets[path.name] = make_asset(path.read_bytes(), content_type)
    return assets


def page_headers(*inline_scripts: str) -> dict[str, str]:
    """Only this origin's files and API, never framed; an inline script runs only when it is
    one of `inline_scripts`, allowed by its hash (no inline style at all)."""
    hashes = "".join(f" '{script_hash(script)}'" for script in inline_scripts)
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; script-src 'self'{hashes}; style-src 'self'; "
            "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'none'"
        ),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


def script_hash(script: str) -> str:
    """A CSP source for one inline script: the SHA-256 of its exact text."""
    digest = hashlib.sha256(script.encode()).digest()
    return "sha256-" + base64.b64encode(digest).decode()


def serve_asset(asset: Asset, request: Request, headers: dict[str, str]) -> Response:
    """`asset` with `headers` (page_headers'), revalidated on every use (ETag), so a new
    release is picked up at once; gzipped when the client accepts it."""
    headers = {
        **headers,
        "ETag": asset.etag,
        "Cache-Control": "no-cache",
        "Vary": "Accept-Encoding",
    }
    if tag_matches(request.headers.get("if-none-match"), asset.etag):
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(asset.gzipped, media_type=asset.content_type, headers=headers)
    return Response(asset.body, media_type=asset.content_type, headers=headers)
