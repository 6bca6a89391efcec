"""The engine platform (dev server, worker, API over HTTP, HTTP peer) for these tests."""

from tests.engine.conftest import platform  # noqa: F401
