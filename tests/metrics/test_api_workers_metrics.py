"""With several API processes on one port, whichever answers a scrape answers for all."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.platform.conftest import api_processes

REQUESTS = 30


def healthz_count(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "trellis_http_request_duration_seconds_count"
                and sample.labels["route"] == "/healthz"
                and sample.labels["status"] == "200"
            ):
                return sample.value
    return 0.0


def test_every_api_process_reports_the_requests_all_of_them_served(tmp_path: Path) -> None:
    with api_processes(tmp_path, workers=2) as (api, url):
        # A new connection per request: the kernel hands each to either process.
        for _ in range(REQUESTS - 1):
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        # A request is counted once its answer is sent: the last may not be yet.
        deadline = time.monotonic() + 10
        while healthz_count(httpx.get(f"{url}/metrics", timeout=5).text) < REQUESTS:
            assert time.monotonic() < deadline, "the last requests were never counted"
            time.sleep(0.05)
        counts = [healthz_count(httpx.get(f"{url}/metrics", timeout=5).text) for _ in range(8)]
        assert counts == [REQUESTS] * 8
        api.terminate()
        assert api.wait(timeout=20) == 0
