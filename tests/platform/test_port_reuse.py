"""The port check refuses only what the server could not bind: TIME_WAIT is no obstacle."""

from __future__ import annotations

import errno
import socket

import pytest

from app.platform.preflight import PreflightError, ensure_port_free


def port_in_time_wait() -> int:
    """A port whose server side just closed a connection first (so it lingers in TIME_WAIT)."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port: int = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            accepted.close()  # the server closes first: its end goes to TIME_WAIT
            client.recv(1)
    return port


def test_a_port_with_connections_in_time_wait_is_free() -> None:
    port = port_in_time_wait()
    with socket.socket() as plain, pytest.raises(OSError) as refused:
        plain.bind(("127.0.0.1", port))  # what the old check did
    assert refused.value.errno == errno.EADDRINUSE

    ensure_port_free("127.0.0.1", port, "API", "TRELLIS_API_PORT")


def test_a_port_someone_listens_on_is_refused_naming_the_setting() -> None:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(PreflightError, match=f"port {port} .* already in use.*API_PORT"):
            ensure_port_free("127.0.0.1", port, "API", "TRELLIS_API_PORT")
