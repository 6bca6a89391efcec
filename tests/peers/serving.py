"""Serve an ASGI app with uvicorn in a background thread on a free 127.0.0.1 port (or another
loopback address, for tests that tell addresses apart)."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from tests.support.server import free_port


class ServedApp:
    """An app listening on `host`:`port` until `stop()`; can be stopped and started again."""

    def __init__(self, app: Any, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.app = app
        self.host = host
        self.port = port or free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> ServedApp:
        # No log config and no level: either would change uvicorn's loggers for the rest of
        # the session (tests/unit/test_logs.py reads uvicorn.access).
        config = uvicorn.Config(
            self.app, host=self.host, port=self.port, log_config=None, lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"app did not start on port {self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = self._thread = None
