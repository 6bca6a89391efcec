"""The worker's metrics port is checked before it starts, like every other port."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.platform.conftest import run_trellis, trellis_env
from tests.support.server import free_port


def test_a_worker_whose_metrics_port_is_taken_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        env = trellis_env(tmp_path / "data", TRELLIS_WORKER_METRICS_PORT=str(port))
        result = run_trellis(["worker"], env)
    assert result.returncode == 1
    assert f"port {port} on 127.0.0.1 (worker metrics) is already in use" in result.stderr
    assert "--worker-metrics-port / TRELLIS_WORKER_METRICS_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_empty_metrics_host_is_the_default_one(tmp_path: Path) -> None:
    # An empty variable means unset for every setting (compose's `${VAR:-}`): the worker
    # serves its metrics on 127.0.0.1 and goes on to its next check (no Temporal here).
    env = trellis_env(
        tmp_path / "data", TRELLIS_WORKER_METRICS_PORT="9", TRELLIS_WORKER_METRICS_HOST=""
    )
    result = run_trellis(["worker"], env)
    assert result.returncode == 1, result.stderr
    assert "worker metrics at http://127.0.0.1:9/metrics" in result.stderr
    assert "TRELLIS_WORKER_METRICS_HOST" not in result.stderr
    assert "cannot reach Temporal" in result.stderr


def test_an_ipv6_metrics_host_is_bracketed_in_its_url(tmp_path: Path) -> None:
    # `http://::1:9/metrics` is no URL: a host with colons takes brackets.
    port = free_port()
    env = trellis_env(
        tmp_path / "data", TRELLIS_WORKER_METRICS_PORT=str(port), TRELLIS_WORKER_METRICS_HOST="::1"
    )
    result = run_trellis(["worker"], env)
    assert result.returncode == 1, result.stderr
    assert f"worker metrics at http://[::1]:{port}/metrics" in result.stderr
