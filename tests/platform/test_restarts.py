"""Restarts are normal: a process killed or stopped comes back at once on the same port,
while clients still hold connections to the one that went away."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.platform.conftest import DevProcess, trellis_env
from tests.support.processes import Processes, process_env


def hold_connections(url: str, count: int) -> list[socket.socket]:
    """`count` raw keep-alive connections, each with one answered request."""
    host, port = url.removeprefix("http://").split(":")
    held = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)))
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
        sock.recv(4096)
        held.append(sock)
    return held


def test_an_api_killed_under_keep_alive_connections_restarts_at_once_on_its_port(
    temporal_env: WorkflowEnvironment, tmp_path: Path, processes: Processes
) -> None:
    env = process_env(tmp_path, temporal_env.client.service_client.config.target_host)
    first = processes.api(env)
    client = httpx.Client(base_url=first.url, timeout=5)  # a pooled keep-alive client
    assert client.get("/healthz").status_code == 200
    held = hold_connections(first.url, 20)

    first.process.kill()
    began = time.monotonic()
    second = processes.api(env, port=first.port)
    restarted_in = time.monotonic() - began

    assert second.port == first.port
    assert restarted_in < 30, second.process.output()
    assert "already in use" not in second.process.output()
    # The old connections are dead; the pooled client reconnects and is answered.
    for _ in range(2):
        try:
            answer = client.get("/readyz")
            break
        except httpx.TransportError:
            continue
    assert answer.status_code == 200
    for sock in held:
        sock.close()
    client.close()


@pytest.mark.long
def test_dev_restarted_right_after_ctrl_c_with_an_open_client_comes_back(
    tmp_path: Path, dev_processes: list[DevProcess]
) -> None:
    env = trellis_env(tmp_path / "data")
    first = DevProcess.start(env)
    dev_processes.append(first)
    first.wait_ready()
    client = httpx.Client(base_url=first.api_url, timeout=5)
    assert client.get("/docs").status_code == 200  # a browser tab on /docs
    held = hold_connections(first.api_url, 5)

    assert first.stop(signal.SIGINT) == 0
    second = DevProcess.start(env)
    dev_processes.append(second)
    second.wait_ready()

    assert "already in use" not in second.output
    assert client.get("/readyz").status_code == 200
    for sock in held:
        sock.close()
    client.close()
