"""A client that goes away while a page of its event stream is being written."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from urllib.parse import urlsplit

import pytest

from app.services.event_stream import PAGE
from tests.support.platform import Platform

# Inline steps, two events each: the first page of the stream is a full one.
STEPS = PAGE // 2 + 10
RESETS = 10


def _reset_after_first_byte(host: str, port: int, path: str) -> None:
    """Ask for the stream and reset the connection (SO_LINGER 0) once its answer began: the
    API is then in the middle of writing a page. In a thread, not on the API's loop."""
    with socket.create_connection((host, port)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        assert sock.recv(1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def test_a_client_reset_mid_page_logs_no_lost_writes(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    # The rest of the page went to the lost connection, and asyncio logged each write from
    # the sixth on: ~490 bare "socket.send() raised exception." lines per reset.
    steps = [
        {"id": f"s{i}", "name": f"s{i}", "nodeType": "step", "executorKey": "builtin:echo"}
        for i in range(STEPS)
    ]
    wf = await platform.create({"nodes": steps})
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id, within=60)
    api = urlsplit(str(platform.api.base_url))
    path = f"/api/v1/workflows/{wf}/runs/{run_id}/events"
    caplog.set_level(logging.WARNING, logger="asyncio")
    for _ in range(RESETS):
        await asyncio.to_thread(_reset_after_first_byte, api.hostname or "", api.port or 0, path)
        await asyncio.sleep(0.05)  # the API's side of the reset is handled
    lost = [r for r in caplog.records if "socket.send() raised" in r.getMessage()]
    assert not lost, f"{len(lost)} lost writes logged"
    assert (await platform.api.get(path.removesuffix("/events"))).status_code == 200
