"""`trellis runs list` and `runs children` ask for node-run counts, not the node runs.

A table shows none of a run's node runs; a run of thousands of them made a page of runs
tens of megabytes (`runs list` took 10.6 s and 1.2 GB to print 3 rows). `--json` prints
the API's answer to the contract's request, every node run included.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request

from tests.peers.serving import ServedApp
from tests.support.cli_in_process import run_cli

RUN = {
    "id": "run-1", "workflowDefinitionId": "wf-1", "workflowVersion": 1,
    "status": "completed", "triggerSource": "manual", "startedAt": "2026-01-01T00:00:00Z",
    "finishedAt": "2026-01-01T00:00:01Z", "parentRunId": None, "errorSummary": None,
    "nodeRuns": [],
}  # fmt: skip
PAGE = {"runs": [RUN], "pagination": {"total": 1, "page": 1, "perPage": 20, "totalPages": 1}}


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An API answering one page of runs, noting each list's query."""
    asked: list[dict[str, Any]] = []
    app = FastAPI()

    @app.get("/api/v1/workflows/{workflow_id}/runs")
    @app.get("/api/v1/workflows/{workflow_id}/runs/{run_id}/children")
    async def runs(request: Request) -> dict[str, Any]:
        asked.append({"path": request.url.path, **request.query_params})
        return PAGE

    @app.get("/api/v1/runs/{run_id}")
    async def run(run_id: str) -> dict[str, Any]:
        return RUN | {"id": run_id}

    served = ServedApp(app).start()
    yield served.base_url, asked
    served.stop()


@pytest.mark.parametrize(
    "args", [("runs", "list", "wf-1"), ("runs", "children", "run-1")], ids=["list", "children"]
)
def test_a_table_asks_for_counts_and_json_for_the_whole_answer(
    api: tuple[str, list[dict[str, Any]]], args: tuple[str, ...]
) -> None:
    url, asked = api
    env = {"PATH": os.environ["PATH"], "TRELLIS_URL": url}
    table = run_cli(args, env)
    assert table.returncode == 0, table.stderr
    assert "run-1" in table.stdout
    assert asked[-1]["nodeRuns"] == "summary"
    as_json = run_cli([*args, "--json"], env)
    assert as_json.returncode == 0, as_json.stderr
    assert asked[-1]["nodeRuns"] == "all"
