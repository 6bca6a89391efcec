"""With several API processes on one port, whichever answers a scrape answers for all."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.platform.conftest import REPO, trellis_env
from tests.support.server import free_port

REQUESTS = 30
START_SECONDS = 60.0


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
    env = trellis_env(tmp_path, TRELLIS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")
    url = f"http://127.0.0.1:{env['TRELLIS_API_PORT']}"
    api = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "api", "--api-workers", "2"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the API did not answer"
            time.sleep(0.1)
        # A new connection per request: the kernel hands each to either process.
        for _ in range(REQUESTS - 1):
            assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        counts = [healthz_count(httpx.get(f"{url}/metrics", timeout=5).text) for _ in range(8)]
        assert counts == [REQUESTS] * 8
        api.terminate()
        assert api.wait(timeout=20) == 0
    finally:
        if api.poll() is None:
            api.kill()
            api.wait()
