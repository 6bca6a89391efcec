"""The tests' port picker: each pytest-xdist worker draws from its own slice, none twice."""

from __future__ import annotations

import pytest

from tests.support.server import PORTS, free_port, own_ports


@pytest.mark.parametrize(
    ("worker", "count", "first", "last"),
    [("gw0", "2", 20_000, 25_999), ("gw1", "2", 26_000, 31_999), ("", "", 20_000, 31_999)],
)
def test_each_worker_draws_from_its_own_slice(
    monkeypatch: pytest.MonkeyPatch, worker: str, count: str, first: int, last: int
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    ports = own_ports()
    assert (ports.start, ports.stop - 1) == (first, last)


def test_no_port_is_handed_out_twice() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == 200
    assert all(port in own_ports() and port in PORTS for port in ports)
