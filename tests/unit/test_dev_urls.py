"""The URLs `trellis dev` waits on and prints: an IPv6 host in brackets."""

from __future__ import annotations

import pytest

from app.platform.dev import _banner, local_host
from app.settings import Settings


@pytest.mark.parametrize(
    ("host", "in_url"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("0.0.0.0", "127.0.0.1"),
        ("::", "127.0.0.1"),
        ("::1", "[::1]"),
        ("[::1]", "[::1]"),
        ("localhost", "localhost"),
    ],
)
def test_the_host_of_a_url_reaches_the_host_a_server_binds(host: str, in_url: str) -> None:
    # `http://::1:8000` is no URL: dev waited on it for the API's /readyz in vain.
    assert local_host(host) == in_url


def test_the_banner_brackets_an_ipv6_worker_metrics_host() -> None:
    settings = Settings(worker_metrics_host="::1", worker_metrics_port=9464)
    assert "http://[::1]:9464/metrics (worker)" in _banner(settings, "http://[::1]:8000")
