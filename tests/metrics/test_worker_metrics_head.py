"""The worker's /metrics answers HEAD as it answers GET, without the body."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.worker_metrics import WorkerMetrics
from tests.support.server import free_port


@pytest.fixture
def metrics_url() -> Iterator[str]:
    port = free_port()
    served = WorkerMetrics.serve("127.0.0.1", port)
    try:
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        served.close()


def test_head_answers_as_get_without_a_body(metrics_url: str) -> None:
    get = httpx.get(metrics_url)
    head = httpx.head(metrics_url)
    assert (get.status_code, head.status_code) == (200, 200)
    assert head.headers["content-type"] == get.headers["content-type"]
    assert int(head.headers["content-length"]) > 0
    assert head.content == b""


def test_a_refused_method_names_head_among_those_allowed(metrics_url: str) -> None:
    refused = httpx.post(metrics_url)
    assert refused.status_code == 405
    assert set(refused.headers["allow"].split(",")) == {"OPTIONS", "GET", "HEAD"}
