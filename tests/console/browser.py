"""Headless Chromium for the console tests: Debian's `chromium`, driven by Playwright.

Playwright never downloads a browser here (`playwright install` is not used): it launches
the system's Chromium. Screenshots go to one artifacts directory, printed after the run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Debian's package; TRELLIS_CHROMIUM names another build of Chromium.
CHROMIUM = os.environ.get("TRELLIS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("TRELLIS_TEST_ARTIFACTS", REPO / "test-artifacts")) / "console"
WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[test]')"
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return (
            f"Chromium is not installed at {CHROMIUM}: `./scripts/bootstrap --browser` installs "
            "Debian's chromium when run as root with apt; the console's browser tests need it"
        )
    return None
