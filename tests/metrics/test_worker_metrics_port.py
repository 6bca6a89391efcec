"""The worker's metrics port is checked before it starts, like every other port."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.platform.conftest import run_trellis, trellis_env


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


def test_an_empty_metrics_host_is_a_bad_setting_in_one_line(tmp_path: Path) -> None:
    env = trellis_env(
        tmp_path / "data", TRELLIS_WORKER_METRICS_PORT="9", TRELLIS_WORKER_METRICS_HOST=""
    )
    result = run_trellis(["worker"], env)
    assert (result.returncode, result.stderr.count("\n")) == (2, 1), result.stderr
    assert "invalid value '' for --worker-metrics-host / TRELLIS_WORKER_METRICS_HOST" in (
        result.stderr
    )
