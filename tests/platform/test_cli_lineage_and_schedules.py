"""The people's CLI for runs that beget runs (`runs rerun | replay | children`) and for
schedules, against a real `trellis dev`: each command changes what the API answers, and
each refused one prints the API's message, exits 1 and changes nothing."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from tests.peers.serving import ServedApp
from tests.platform.conftest import DevProcess, running_dev, trellis_env
from tests.platform.test_cli_for_people import applied_workflow, ok, trellis, wait_for_gate
from tests.support.cli_in_process import run_cli


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    """One `trellis dev` for the module."""
    with running_dev(trellis_env(tmp_path_factory.mktemp("cli-more") / "data")) as process:
        yield process


def api(dev: DevProcess, path: str) -> httpx.Response:
    return httpx.get(f"{dev.api_url}/api/v1{path}", timeout=10)


def two_step_workflow(dev: DevProcess, tmp_path: Path) -> str:
    """An enabled workflow of two top-level steps, `first` and `second`."""
    path = tmp_path / "two.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True, "nodes": [
                {"id": "first", "name": "First", "nodeType": "step",
                 "executorKey": "builtin:echo", "config": {"n": 1}},
                {"id": "second", "name": "Second", "nodeType": "step",
                 "executorKey": "builtin:echo", "config": {"who": "{{ input.who }}"}},
            ]}
        )
    )  # fmt: skip
    return str(json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))["id"])


def finished(dev: DevProcess, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run: dict[str, Any] = api(dev, f"/runs/{run_id}").json()
        if run["status"] in ("completed", "failed", "cancelled"):
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


def completed_run(dev: DevProcess, tmp_path: Path) -> tuple[str, str]:
    workflow_id = two_step_workflow(dev, tmp_path)
    started = ok(trellis(dev, "runs", "start", workflow_id, "--input", "who=Ada", "--json"))
    run_id = json.loads(started)["runId"]
    assert finished(dev, run_id)["status"] == "completed"
    return workflow_id, run_id


def children_of(dev: DevProcess, workflow_id: str, run_id: str) -> list[dict[str, Any]]:
    answer = api(dev, f"/workflows/{workflow_id}/runs/{run_id}/children").json()
    return list(answer["runs"])


def test_rerun_of_a_step_starts_a_child_run_that_runs_children_lists(
    dev: DevProcess, tmp_path: Path
) -> None:
    _, run_id = completed_run(dev, tmp_path)
    said = ok(trellis(dev, "runs", "rerun", run_id, "second"))
    child_id = said.split("rerun started: run ")[1].split()[0]
    assert f"a child of run {run_id}" in said
    child = finished(dev, child_id)
    assert (child["triggerSource"], child["parentRunId"]) == ("node_rerun", run_id)
    assert child["status"] == "completed"
    assert child["finalOutput"]["config"] == {"who": "Ada"}
    listed = ok(trellis(dev, "runs", "children", run_id))
    assert child_id in listed and "node_rerun" in listed
    # Its lineage and where Temporal has it, as the console's run page shows them.
    shown = ok(trellis(dev, "runs", "show", child_id, COLUMNS="300"))
    assert f"parent run: {run_id}" in shown, shown
    ui = f"http://127.0.0.1:{dev.env['TRELLIS_UI_PORT']}"
    assert f"temporal: {ui}/namespaces/default/workflows/{child_id}" in shown, shown
    assert "parent run" not in ok(trellis(dev, "runs", "show", run_id))


def test_rerun_takes_a_top_level_steps_name_and_refuses_one_two_steps_have(
    dev: DevProcess, tmp_path: Path
) -> None:
    # README says NODE_ID is the step's id; a team typed the name `runs show` prints, and
    # got "Invalid node id" or the API's 404.
    path = tmp_path / "named.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True, "nodes": [
                {"id": "make", "name": "Create account", "nodeType": "step",
                 "executorKey": "builtin:echo", "config": {"n": 1}},
                {"id": "sum-a", "name": "Summary", "nodeType": "step",
                 "executorKey": "builtin:echo", "config": {"n": 2}},
                {"id": "sum-b", "name": "Summary", "nodeType": "step",
                 "executorKey": "builtin:echo", "config": {"n": 3}},
            ]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    assert finished(dev, run_id)["status"] == "completed"
    twice = trellis(dev, "runs", "rerun", run_id, "Summary")
    assert twice.returncode == 2, twice.stdout
    assert (
        "Error: 2 top-level steps are named 'Summary': give the id of one of them (sum-a, sum-b)"
    ) in twice.stderr
    assert children_of(dev, workflow_id["id"], run_id) == []
    by_name = json.loads(ok(trellis(dev, "runs", "rerun", run_id, "Create account", "--json")))
    child = finished(dev, by_name["run_id"])
    # The rerun step ran again; the ones after it did not (the output is the rerun step's).
    assert (child["status"], child["finalOutput"]["config"]) == ("completed", {"n": 1})
    by_id = json.loads(ok(trellis(dev, "runs", "rerun", run_id, "sum-b", "--json")))
    assert finished(dev, by_id["run_id"])["finalOutput"]["config"] == {"n": 3}


def test_rerun_of_a_nested_step_by_its_name_is_the_apis_answer_as_by_its_id(
    dev: DevProcess, tmp_path: Path
) -> None:
    # The name was looked up among the top-level steps only and sent as an id: the API's
    # 404 "Node 'Inner' not found in run", where its id had the accurate 400.
    path = tmp_path / "nested.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"cli-{uuid.uuid4().hex[:8]}", "enabled": True, "nodes": [
                {"id": "both", "name": "Both", "nodeType": "parallel", "children": [
                    {"id": "inner", "name": "Inner", "nodeType": "step",
                     "executorKey": "builtin:echo", "config": {"n": 1}},
                    {"id": "other", "name": "Other", "nodeType": "step",
                     "executorKey": "builtin:echo", "config": {"n": 2}},
                ]},
            ]}
        )
    )  # fmt: skip
    workflow_id = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id["id"], "--json")))["runId"]
    assert finished(dev, run_id)["status"] == "completed"
    for given in ("Inner", "inner"):
        refused = trellis(dev, "runs", "rerun", run_id, given)
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr == (
            "Error: 400 invalid_request: Nested node rerun is not supported.\n"
        ), refused.stderr
    assert children_of(dev, workflow_id["id"], run_id) == []


def test_replay_starts_a_child_run_and_children_json_is_the_apis_answer(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id, run_id = completed_run(dev, tmp_path)
    replayed = json.loads(ok(trellis(dev, "runs", "replay", run_id, "--json")))
    assert (replayed["triggerSource"], replayed["parentRunId"]) == ("replay", run_id)
    child = finished(dev, replayed["runId"])
    assert (child["triggerSource"], child["parentRunId"]) == ("replay", run_id)
    assert child["initialInput"] == {"who": "Ada"}
    printed = ok(trellis(dev, "runs", "children", run_id, "--json"))
    answered = api(dev, f"/workflows/{workflow_id}/runs/{run_id}/children")
    assert printed == answered.text + "\n"
    assert [r["id"] for r in answered.json()["runs"]] == [replayed["runId"]]


def test_rerun_of_a_run_still_going_is_refused_with_the_apis_message(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied_workflow(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    gate = wait_for_gate(dev, run_id)
    node_id = api(dev, f"/workflows/{workflow_id}").json()["nodes"][1]["id"]
    refused = trellis(dev, "runs", "rerun", run_id, node_id)
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr.strip() == (
        f"Error: 400 invalid_request: Run '{run_id}' is awaiting_approval; a node can be "
        "rerun only from a completed or failed run"
    )
    assert children_of(dev, workflow_id, run_id) == []
    ok(trellis(dev, "approve", run_id, gate["stepId"]))


def test_an_unknown_run_or_node_is_the_apis_404_and_starts_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id, run_id = completed_run(dev, tmp_path)
    for args, says in [
        (("rerun", run_id, "no-such-node"), f"Node 'no-such-node' not found in run '{run_id}'"),
        (("rerun", "no-such-run", "second"), "Run 'no-such-run' not found"),
        (("replay", "no-such-run"), "Run 'no-such-run' not found"),
        (("children", "no-such-run"), "Run 'no-such-run' not found"),
    ]:
        result = trellis(dev, "runs", *args)
        assert result.returncode == 1, (args, result.stdout)
        assert result.stderr.strip() == f"Error: 404 resource_not_found: {says}", args
    assert children_of(dev, workflow_id, run_id) == []


def listed_schedules(dev: DevProcess, workflow_id: str) -> list[str]:
    answer = api(dev, f"/workflows/{workflow_id}/schedules").json()
    return [s["id"] for s in answer["schedules"]]


def until_listed(dev: DevProcess, workflow_id: str, ids: list[str]) -> None:
    """The list is a visibility query: a change shows there a moment later."""
    deadline = time.monotonic() + 20
    while listed_schedules(dev, workflow_id) != ids:
        assert time.monotonic() < deadline, (listed_schedules(dev, workflow_id), ids)
        time.sleep(0.2)


def test_schedules_create_list_show_trigger_pause_and_delete(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = two_step_workflow(dev, tmp_path)
    created = json.loads(
        ok(
            trellis(dev, "schedules", "create", workflow_id, "--cron", "0 9 * * MON-FRI",
                    "--time-zone", "Europe/Berlin", "--input", "who=Ada", "--json")
        )
    )  # fmt: skip
    schedule_id = created["id"]
    assert (created["cron"], created["timeZone"]) == ("0 9 * * MON-FRI", "Europe/Berlin")
    assert (created["initialInput"], created["paused"]) == ({"who": "Ada"}, False)
    until_listed(dev, workflow_id, [schedule_id])
    listed = ok(trellis(dev, "schedules", "list", workflow_id))
    assert schedule_id in listed and "cron 0 9 * * MON-FRI (Europe/Berlin)" in listed
    printed = ok(trellis(dev, "schedules", "show", schedule_id, "--json"))
    assert printed == api(dev, f"/workflows/{workflow_id}/schedules/{schedule_id}").text + "\n"
    assert '{"who":"Ada"}' in ok(trellis(dev, "schedules", "show", schedule_id))
    assert "Schedule fired" in ok(trellis(dev, "schedules", "trigger", schedule_id))
    deadline = time.monotonic() + 30
    while not (runs := api(dev, f"/workflows/{workflow_id}/runs").json()["runs"]):
        assert time.monotonic() < deadline, "the trigger started no run"
        time.sleep(0.2)
    fired = api(dev, f"/runs/{runs[0]['id']}").json()
    assert (fired["triggerSource"], fired["initialInput"]) == ("schedule", {"who": "Ada"})
    assert f"schedule: {schedule_id}" in ok(trellis(dev, "runs", "show", fired["id"]))
    # Its runs, by the schedule (a firing's trigger workflow id is not a run id).
    shown = ok(trellis(dev, "schedules", "show", schedule_id))
    assert f"its runs: trellis runs list {workflow_id} --schedule {schedule_id}" in shown
    ok(trellis(dev, "runs", "start", workflow_id))
    mine = json.loads(ok(trellis(dev, "runs", "list", workflow_id, "--schedule", schedule_id,
                                 "--json")))  # fmt: skip
    assert [r["id"] for r in mine["runs"]] == [fired["id"]]
    assert fired["id"] in ok(trellis(dev, "runs", "list", workflow_id, "--schedule", schedule_id))
    ok(trellis(dev, "schedules", "pause", schedule_id))
    assert api(dev, f"/workflows/{workflow_id}/schedules/{schedule_id}").json()["paused"]
    assert "next firings: none while paused" in ok(trellis(dev, "schedules", "show", schedule_id))
    ok(trellis(dev, "schedules", "unpause", schedule_id))
    assert not api(dev, f"/workflows/{workflow_id}/schedules/{schedule_id}").json()["paused"]
    deleted = trellis(dev, "schedules", "delete", schedule_id, "--json")
    assert (deleted.returncode, deleted.stdout) == (0, ""), deleted.stderr
    assert api(dev, f"/workflows/{workflow_id}/schedules/{schedule_id}").status_code == 404
    until_listed(dev, workflow_id, [])


def test_schedules_show_tells_a_skipped_firing_from_a_run_not_recorded(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Both were `-`, which README called a skip; the skip log tells them apart.
    workflow_id = two_step_workflow(dev, tmp_path)
    ok(trellis(dev, "workflows", "disable", workflow_id))
    made = json.loads(
        ok(trellis(dev, "schedules", "create", workflow_id, "--interval-seconds", "1", "--json"))
    )
    path = f"/workflows/{workflow_id}/schedules/{made['id']}"
    deadline = time.monotonic() + 30
    while len(api(dev, f"{path}/skips").json()["skips"]) < 2:
        assert time.monotonic() < deadline, "the firings of a disabled workflow logged no skip"
        time.sleep(0.2)
    ok(trellis(dev, "schedules", "pause", made["id"]))
    shown = ok(trellis(dev, "schedules", "show", made["id"]))
    fired = api(dev, path).json()["recentActions"]
    assert fired and all(action["runId"] is None for action in fired), fired
    rows = [
        next(line for line in shown.splitlines() if action["triggerWorkflowId"] in line)
        for action in fired
    ]
    assert "none: skipped (workflow disabled)" in rows[0], shown
    # The newest may have fired after the skips were read: its skip not logged then.
    for row in rows:
        assert "none: skipped (workflow disabled)" in row or "not recorded yet" in row, row
    ok(trellis(dev, "schedules", "delete", made["id"]))


def test_a_bad_cron_is_the_apis_400_and_creates_nothing(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = two_step_workflow(dev, tmp_path)
    # Refused by the body's grammar, and by Temporal's calendar (February 31st never comes).
    for cron, says in [("61 * * * *", "is not a cron expression"), ("0 0 31 2 *", "never fires")]:
        refused = trellis(dev, "schedules", "create", workflow_id, "--cron", cron)
        assert refused.returncode == 1, refused.stdout
        error = httpx.post(
            f"{dev.api_url}/api/v1/workflows/{workflow_id}/schedules", json={"cron": cron}
        ).json()["error"]
        assert says in error["message"]
        line = f"Error: 400 invalid_request: {error['message']}"
        assert refused.stderr.startswith(line), refused.stderr
    # The list lags: once a schedule made after the refusals shows, it is the only one.
    made = json.loads(
        ok(trellis(dev, "schedules", "create", workflow_id, "--interval-seconds", "3600",
                   "--paused", "--json"))
    )  # fmt: skip
    assert (made["intervalSeconds"], made["paused"]) == (3600, True)
    until_listed(dev, workflow_id, [made["id"]])


def test_an_unknown_schedule_is_the_apis_404_and_changes_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = two_step_workflow(dev, tmp_path)
    made = json.loads(
        ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "@daily", "--json"))
    )
    unknown = f"sched-{workflow_id}-000000000000"
    for command in ("show", "pause", "trigger", "delete"):
        result = trellis(dev, "schedules", command, unknown)
        assert result.returncode == 1, (command, result.stdout)
        says = f"Error: 404 resource_not_found: Schedule not found: {unknown}"
        assert result.stderr.strip() == says, command
    malformed = trellis(dev, "schedules", "delete", "not-a-schedule")
    assert malformed.returncode == 2 and "'not-a-schedule' is not a schedule id" in malformed.stderr
    kept = api(dev, f"/workflows/{workflow_id}/schedules/{made['id']}").json()
    assert (kept["paused"], kept["numActions"]) == (False, 0)
    until_listed(dev, workflow_id, [made["id"]])


@pytest.mark.parametrize(
    ("config", "says"),
    [(None, "temporal workflow id: run-1\n"),
     ({"temporalUiUrl": None, "temporalNamespace": "default"},
      "temporal workflow id: run-1 (no Temporal Web UI: TRELLIS_TEMPORAL_UI_URL)\n")],
    ids=["no-console", "no-web-ui"],
)  # fmt: skip
def test_run_show_without_a_temporal_web_ui_names_the_workflow_id(
    config: dict[str, Any] | None, says: str
) -> None:
    # A platform on a Temporal of its own has no Web UI link unless configured; an API
    # behind a proxy may serve no console: the run's Temporal workflow id is said all the same.
    app = FastAPI()
    run = {"id": "run-1", "workflowDefinitionId": "wf-1", "workflowVersion": 1,
           "status": "completed", "triggerSource": "manual",
           "startedAt": "2026-01-01T00:00:00Z", "nodeRuns": [],
           "nodeRunSummary": {"total": 0, "byStatus": {}}}  # fmt: skip

    @app.get("/api/v1/runs/{run_id}")
    async def detail() -> dict[str, Any]:
        return run

    @app.get("/api/v1/workflows/{workflow_id}/runs/{run_id}/nodes")
    async def nodes() -> dict[str, Any]:
        return {"nodeRuns": [], "pagination": {"total": 0, "page": 1, "perPage": 50,
                                               "totalPages": 0}}  # fmt: skip

    @app.get("/console/config.json")
    async def console_config() -> JSONResponse:
        return JSONResponse(config or {"error": {"code": "x"}}, status_code=200 if config else 404)

    served = ServedApp(app).start()
    try:
        env = {"PATH": os.environ["PATH"], "TRELLIS_URL": served.base_url}
        shown = ok(run_cli(["runs", "show", "run-1"], env))
    finally:
        served.stop()
    assert says in shown, shown
