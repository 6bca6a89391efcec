"""The console's files, read once at start-up: bytes, a gzip copy, an ETag and a content type.

The console is a handful of small hand-written files shipped in the package (nothing is built
at run time), so holding them in memory costs little and lets every answer carry a strong
ETag and, for clients that accept it, a gzip body.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
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


def load_assets(directory: Path = STATIC_DIR) -> dict[str, Asset]:
    """Every servable file of `directory` by name (no subdirectories: the console is flat)."""
    assets: dict[str, Asset] = {}
    for path in sorted(directory.iterdir()):
        content_type = CONTENT_TYPES.get(path.suffix)
        if content_type is None or not path.is_file():
            continue
        body = path.read_bytes()
        assets[path.name] = Asset(
            body=body,
            # mtime=0: the same bytes on every start, so the ETag's meaning never drifts.
            gzipped=gzip.compress(body, compresslevel=9, mtime=0),
            etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
            content_type=content_type,
        )
    return assets
