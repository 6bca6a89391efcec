"""A TCP proxy that can drop its connections while a request is on the way, or hang.

Armed, it cuts every connection the moment the client next sends bytes, so that request
is lost with its connection (as when a server closes a connection it has aged out); then
it forwards again, so the next connection works.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tests.support.server import free_port


class CuttingProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self.armed = False
        # Frozen, it forwards nothing the client sends and cuts nothing: a server that
        # hangs (a process stopped with SIGSTOP), not one that is down.
        self.frozen = False
        self.cuts = 0
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, from_client: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if from_client and self.frozen:
                    continue
                if from_client and self.armed:
                    self.armed = False
                    self.cuts += 1
                    self._cut()
                    return
                writer.write(data)
                await writer.drain()
        writer.close()

    def _cut(self) -> None:
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*self._upstream)
        except OSError:
            client_w.transport.abort()
            return
        self._writers += [client_w, server_w]
        await asyncio.gather(
            self._pipe(client_r, server_w, True), self._pipe(server_r, client_w, False)
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CuttingProxy]:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        try:
            yield self
        finally:
            self._cut()
            self._server.close()
            await self._server.wait_closed()
