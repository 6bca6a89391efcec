"""The people's CLI for deleting and sharing workflows, their versions, schedule updates and
skips, and the executor catalog, against a real `trellis dev` whose catalog names the test
peers: each command reads or changes what the API answers, --json prints the API's answer,
and each refused one says why and changes nothing."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from app.cli.api_client import Answer, TrellisApi
from app.cli.main import main as cli_main
from tests.peers.catalog import Peers
from tests.platform.conftest import REPO, DevProcess, running_dev, trellis_env
from tests.platform.test_cli_for_people import ok, trellis, wait_for_gate


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory, peers: Peers) -> Iterator[DevProcess]:
    """One `trellis dev` for the module, its catalog the test peers' (refreshed only on
    demand, so two reads of the catalog answer the same)."""
    env = trellis_env(
        tmp_path_factory.mktemp("cli-admin") / "data",
        TRELLIS_EXECUTORS_FILE=str(peers.catalog_path),
        TRELLIS_CATALOG_REFRESH_SECONDS="3600",
    )
    with running_dev(env) as process:
        yield process


def api(dev: DevProcess, path: str) -> httpx.Response:
    return httpx.get(f"{dev.api_url}/api/v1{path}", timeout=10)


def applied(dev: DevProcess, tmp_path: Path, *, gate: bool = False, enabled: bool = True) -> str:
    """A workflow of one step (behind a gate when `gate`); its id."""
    step: dict[str, Any] = {"id": "greet", "name": "Greet", "nodeType": "step",
                            "executorKey": "builtin:echo", "config": {"n": 1}}  # fmt: skip
    if gate:
        step["humanReview"] = {"requiresConfirmation": True}
    name = f"cli-{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "enabled": enabled, "nodes": [step]}))
    return str(json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))["id"])


def refused(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return result.stderr.strip()


def on_a_terminal(dev: DevProcess, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`trellis ARGS` with a pseudo-terminal for stdin, `answer` typed into it."""
    main, child = pty.openpty()
    try:
        command = subprocess.Popen(
            [sys.executable, "-m", "app.cli", *args],
            env={**dev.env, "TRELLIS_URL": dev.api_url}, cwd=REPO, text=True,
            stdin=child, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        os.write(main, answer.encode())
        stdout, stderr = command.communicate(timeout=30)
    finally:
        os.close(child)
        os.close(main)
    return subprocess.CompletedProcess(command.args, command.returncode, stdout, stderr)


def test_delete_with_yes_deletes_the_workflow_its_schedules_and_its_open_runs(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path, gate=True)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    made = ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "@daily", "--json"))
    schedule_id = json.loads(made)["id"]
    deleted = trellis(dev, "workflows", "delete", workflow_id, "--yes", "--json")
    assert (deleted.returncode, deleted.stdout) == (0, ""), deleted.stderr  # a 204: no body
    assert api(dev, f"/workflows/{workflow_id}").status_code == 404
    assert api(dev, f"/runs/{run_id}").status_code == 404
    assert api(dev, f"/workflows/{workflow_id}/schedules/{schedule_id}").status_code == 404
    again = trellis(dev, "workflows", "delete", workflow_id, "--yes")
    says = f"Error: 404 resource_not_found: Workflow '{workflow_id}' not found"
    assert refused(again, 1) == says


def test_delete_on_a_terminal_asks_first_and_a_no_keeps_the_workflow(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path)
    kept = on_a_terminal(dev, "n\n", "workflows", "delete", workflow_id)
    assert "Delete workflow 'cli-" in kept.stderr and "[y/N]" in kept.stderr
    assert refused(kept, 1).endswith(f"Error: workflow {workflow_id} not deleted")
    assert api(dev, f"/workflows/{workflow_id}").status_code == 200
    gone = on_a_terminal(dev, "y\n", "workflows", "delete", workflow_id)
    assert ok(gone).strip() == f"deleted workflow {workflow_id}"
    assert api(dev, f"/workflows/{workflow_id}").status_code == 404


def test_delete_with_no_terminal_and_no_yes_is_refused_and_deletes_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path)
    result = trellis(dev, "workflows", "delete", workflow_id, stdin="y\n")
    assert "there is no terminal to confirm on; give --yes" in refused(result, 2)
    assert api(dev, f"/workflows/{workflow_id}").status_code == 200


def test_versions_lists_every_kept_version_and_show_version_shows_one(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path)
    definition = api(dev, f"/workflows/{workflow_id}").json()
    changed = tmp_path / "changed.yaml"
    nodes = [{**definition["nodes"][0], "name": "Greet again"}]
    changed.write_text(yaml.safe_dump({"id": workflow_id, "name": definition["name"],
                                       "nodes": nodes}))  # fmt: skip
    ok(trellis(dev, "workflows", "apply", "-f", str(changed)))
    listed = ok(trellis(dev, "workflows", "versions", workflow_id))
    assert "versions (2)" in listed and "Greet again" not in listed
    printed = ok(trellis(dev, "workflows", "versions", workflow_id, "--json"))
    answered = api(dev, f"/workflows/{workflow_id}/versions")
    assert printed == answered.text + "\n"
    assert [v["version"] for v in answered.json()["versions"]] == [1, 2]
    first = ok(trellis(dev, "workflows", "show", workflow_id, "--version", "1"))
    assert "version 1, saved" in first and "Greet" in first and "Greet again" not in first
    printed = ok(trellis(dev, "workflows", "show", workflow_id, "--version", "2", "--json"))
    assert printed == api(dev, f"/workflows/{workflow_id}/versions/2").text + "\n"
    # A kept version, printed and applied, brings its workflow back to it, by the id it
    # prints (`workflowId`), though the workflow was renamed since (found by an audit: it
    # was applied by name, and made a second workflow with the old one).
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(yaml.safe_dump({"id": workflow_id, "name": "Renamed", "nodes": nodes}))
    ok(trellis(dev, "workflows", "apply", "-f", str(renamed)))
    old = tmp_path / "v1.json"
    old.write_text(ok(trellis(dev, "workflows", "show", workflow_id, "--version", "1", "--json")))
    back = trellis(dev, "workflows", "apply", "-f", str(old))
    assert back.returncode == 0 and back.stderr == "", back.stderr
    assert f"updated workflow {workflow_id}" in back.stdout, back.stdout
    now = api(dev, f"/workflows/{workflow_id}").json()
    assert (now["version"], now["name"]) == (4, definition["name"])
    assert now["nodes"][0]["name"] == definition["nodes"][0]["name"]
    listed = httpx.get(f"{dev.api_url}/api/v1/workflows", params={"query": definition["name"]})
    named = listed.json()["workflows"]
    assert [w["id"] for w in named] == [workflow_id]
    missing = trellis(dev, "workflows", "show", workflow_id, "--version", "9")
    assert refused(missing, 1) == (
        f"Error: 404 resource_not_found: Workflow '{workflow_id}' has no version 9"
    )
    unknown = trellis(dev, "workflows", "versions", "no-such-workflow")
    assert (
        refused(unknown, 1)
        == "Error: 404 resource_not_found: Workflow 'no-such-workflow' not found"
    )


def test_catalog_lists_the_mcp_servers_and_a2a_agents_as_the_api_answers(
    dev: DevProcess,
) -> None:
    servers = ok(trellis(dev, "catalog", "servers", "--refresh"))
    answered = api(dev, "/servers").json()
    http_server = next(s for s in answered if s["id"] == "peer-http")
    assert http_server["status"] == "up" and http_server["tools"]
    row = next(line for line in servers.splitlines() if "peer-http" in line)
    assert "up" in row and f" {len(http_server['tools'])} " in row, row
    assert ok(trellis(dev, "catalog", "servers", "--json")) == api(dev, "/servers").text + "\n"
    agents = ok(trellis(dev, "catalog", "agents"))
    row = next(line for line in agents.splitlines() if "account-manager-v2 " in line)
    assert "up" in row and "premium-accounts" in row, row
    dead = next(line for line in agents.splitlines() if "dead-agent" in line)
    assert "down" in dead, dead
    assert ok(trellis(dev, "catalog", "agents", "--json")) == api(dev, "/agents").text + "\n"


def schedule(dev: DevProcess, schedule_id: str) -> dict[str, Any]:
    workflow_id = schedule_id.removeprefix("sched-")[:-13]
    answer: dict[str, Any] = api(dev, f"/workflows/{workflow_id}/schedules/{schedule_id}").json()
    return answer


def test_schedules_update_changes_what_its_flags_give_and_keeps_the_rest(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path)
    made = ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "0 9 * * MON-FRI",
                      "--time-zone", "Europe/Berlin", "--input", "who=Ada",
                      "--overlap-policy", "buffer_one", "--json"))  # fmt: skip
    schedule_id = json.loads(made)["id"]
    said = ok(trellis(dev, "schedules", "update", schedule_id, "--interval-seconds", "120"))
    assert said.strip() == f"updated schedule {schedule_id}: every 120 s"
    now = schedule(dev, schedule_id)
    assert (now["cron"], now["intervalSeconds"], now["timeZone"]) == (None, 120, "Europe/Berlin")
    assert (now["initialInput"], now["overlapPolicy"], now["paused"]) == (
        {"who": "Ada"}, "buffer_one", False,
    )  # fmt: skip
    printed = ok(trellis(dev, "schedules", "update", schedule_id, "--paused",
                         "--input", "who=Bob", "--json"))  # fmt: skip
    now = schedule(dev, schedule_id)
    assert (now["intervalSeconds"], now["initialInput"], now["paused"]) == (
        120,
        {"who": "Bob"},
        True,
    )
    assert json.loads(printed)["initialInput"] == {"who": "Bob"}
    assert {k: v for k, v in json.loads(printed).items() if k != "recentActions"} == {
        k: v for k, v in now.items() if k != "recentActions"
    }


def test_schedules_update_refused_by_the_api_changes_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path)
    made = ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "@daily", "--json"))
    schedule_id = json.loads(made)["id"]
    before = schedule(dev, schedule_id)
    bad = trellis(dev, "schedules", "update", schedule_id, "--cron", "61 * * * *",
                  "--input", "who=Eve")  # fmt: skip
    assert refused(bad, 1).startswith("Error: 400 invalid_request: ")
    assert "is not a cron expression" in bad.stderr
    unknown = f"sched-{workflow_id}-000000000000"
    missing = trellis(dev, "schedules", "update", unknown, "--paused")
    assert refused(missing, 1) == f"Error: 404 resource_not_found: Schedule not found: {unknown}"
    after = schedule(dev, schedule_id)
    assert (after["cron"], after["initialInput"], after["paused"]) == ("@daily", {}, False)
    assert after == before


def test_contradicting_flags_are_a_usage_error_naming_both_and_change_nothing(
    dev: DevProcess, tmp_path: Path
) -> None:
    # `--paused --unpaused` took the last one (`--unpaused --paused` paused the schedule),
    # and two values of one `--input` key or two grants of one principal the last one too.
    workflow_id = applied(dev, tmp_path)
    made = ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "@daily",
                      "--input", "who=Ada", "--json"))  # fmt: skip
    schedule_id = json.loads(made)["id"]
    before = schedule(dev, schedule_id)
    for args, says in (
        (("--paused", "--unpaused"), "--paused and --unpaused contradict each other: give one"),
        (("--unpaused", "--paused"), "--paused and --unpaused contradict each other: give one"),
        (("--input", "who=Bob", "--input", "who=Eve"),
         "Invalid value for --input: 'who' given twice: give each key once"),
    ):  # fmt: skip
        result = trellis(dev, "schedules", "update", schedule_id, *args)
        assert refused(result, 2).endswith(f"Error: {says}"), args
    assert schedule(dev, schedule_id) == before
    grants = api(dev, f"/workflows/{workflow_id}/permissions").json()
    twice = trellis(dev, "workflows", "share", workflow_id,
                    "--grant", "user:bob=VIEW", "--grant", "user:bob=EDIT")  # fmt: skip
    assert refused(twice, 2).endswith(
        "Error: user:bob: granted twice, differently; give one --grant"
    )
    assert api(dev, f"/workflows/{workflow_id}/permissions").json() == grants
    # The same grant in another order, or with the VIEW any brings, is no contradiction
    # (found by a review: it was refused).
    ok(trellis(dev, "workflows", "share", workflow_id,
               "--grant", "user:bob=VIEW,EDIT", "--grant", "user:bob=EDIT"))  # fmt: skip
    bob = api(dev, f"/workflows/{workflow_id}/permissions").json()["grants"]
    assert [(g["principal"], set(g["permissions"])) for g in bob] == [
        ("user:bob", {"VIEW", "EDIT"})
    ], bob


def changed_right_after_the_read(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[], httpx.Response]
) -> None:
    """The CLI's next GET is followed, before it returns, by `change` made by someone else
    through the API: a real change between the CLI's read and its PUT."""
    read = TrellisApi.get

    def get_then_change(self: TrellisApi, path: str, **params: Any) -> Answer:
        answer = read(self, path, **params)
        made = change()
        assert made.is_success, made.text
        return answer

    monkeypatch.setattr(TrellisApi, "get", get_then_change)


def test_a_change_between_the_read_and_the_write_is_kept_and_the_cli_exits_1(
    dev: DevProcess,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # In this process (the change is made inside the CLI's read), against the real API.
    workflow_id = applied(dev, tmp_path)
    made = ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "@daily", "--json"))
    schedule_id = json.loads(made)["id"]
    schedule_url = f"{dev.api_url}/api/v1/workflows/{workflow_id}/schedules/{schedule_id}"
    monkeypatch.setenv("TRELLIS_URL", dev.api_url)
    changed_right_after_the_read(
        monkeypatch, lambda: httpx.post(f"{schedule_url}/pause", timeout=10)
    )
    assert cli_main(["schedules", "update", schedule_id, "--interval-seconds", "120"]) == 1
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"Error: 412 precondition_failed: Schedule {schedule_id} changed")
    now = schedule(dev, schedule_id)
    assert (now["cron"], now["intervalSeconds"], now["paused"]) == ("@daily", None, True)

    grants_url = f"{dev.api_url}/api/v1/workflows/{workflow_id}/permissions"
    bob = {"grants": [{"principal": "user:bob", "permissions": ["VIEW"]}]}
    changed_right_after_the_read(monkeypatch, lambda: httpx.put(grants_url, json=bob, timeout=10))
    assert cli_main(["workflows", "share", workflow_id, "--grant", "role:ops=EDIT"]) == 1
    said = capsys.readouterr().err.strip()
    assert said.startswith("Error: 412 precondition_failed: The permissions of workflow")
    assert httpx.get(grants_url, timeout=10).json()["grants"] == bob["grants"]

    workflow_url = f"{dev.api_url}/api/v1/workflows/{workflow_id}"
    stored = httpx.get(workflow_url, timeout=10).json()
    saves: list[str] = []

    def save() -> httpx.Response:
        saves.append(f"save {len(saves)}")
        return httpx.put(workflow_url, json={"description": saves[-1]}, timeout=10)

    changed_right_after_the_read(monkeypatch, save)
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"id": workflow_id, "name": stored["name"],
                                    "nodes": stored["nodes"], "description": "mine"}))  # fmt: skip
    assert cli_main(["workflows", "apply", "-f", str(mine)]) == 1
    said = capsys.readouterr().err.strip()
    assert said.startswith(f"Error: 412 precondition_failed: Workflow {workflow_id} changed")
    now = httpx.get(workflow_url, timeout=10).json()
    # Each read the CLI made was followed by a save; the last one is kept, not the file's.
    assert (now["description"], now["version"]) == (saves[-1], stored["version"] + len(saves))
    assert now["nodes"] == stored["nodes"]


def test_schedules_skips_lists_the_firings_that_started_no_run(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path, enabled=False)
    made = ok(trellis(dev, "schedules", "create", workflow_id, "--cron", "@daily", "--json"))
    schedule_id = json.loads(made)["id"]
    assert "(0)" in ok(trellis(dev, "schedules", "skips", schedule_id))
    # Fired on request, it would start nothing: refused, as every trigger of a disabled
    # workflow is. Its time come, it fires and the firing is skipped.
    fired = trellis(dev, "schedules", "trigger", schedule_id)
    assert refused(fired, 1).startswith("Error: 400 invalid_request: Workflow is disabled.")
    ok(trellis(dev, "schedules", "update", schedule_id, "--interval-seconds", "1"))
    path = f"/workflows/{workflow_id}/schedules/{schedule_id}/skips"
    deadline = time.monotonic() + 30
    while not api(dev, path).json()["skips"]:
        assert time.monotonic() < deadline, "the firing of a disabled workflow logged no skip"
        time.sleep(0.2)
    ok(trellis(dev, "schedules", "pause", schedule_id))
    listed = ok(trellis(dev, "schedules", "skips", schedule_id))
    assert "skipped firings (" in listed and "workflow disabled" in listed
    assert (
        ok(trellis(dev, "schedules", "skips", schedule_id, "--json")) == api(dev, path).text + "\n"
    )
    ok(trellis(dev, "schedules", "delete", schedule_id))
    unknown = f"sched-{workflow_id}-000000000000"
    missing = trellis(dev, "schedules", "skips", unknown)
    assert refused(missing, 1) == f"Error: 404 resource_not_found: Schedule not found: {unknown}"


def grants(dev: DevProcess, workflow_id: str) -> dict[str, list[str]]:
    answer = api(dev, f"/workflows/{workflow_id}/permissions").json()
    return {g["principal"]: g["permissions"] for g in answer["grants"]}


def test_share_grants_and_revokes_and_shows_the_owner_and_grants(
    dev: DevProcess, tmp_path: Path
) -> None:
    workflow_id = applied(dev, tmp_path)
    shown = ok(trellis(dev, "workflows", "share", workflow_id))
    assert f"workflow {workflow_id}, owned by user:dev" in shown and "grants (0)" in shown
    ok(trellis(dev, "workflows", "share", workflow_id,
               "--grant", "user:bob=EDIT", "--grant", "role:ops=view,share"))  # fmt: skip
    assert grants(dev, workflow_id) == {"user:bob": ["VIEW", "EDIT"], "role:ops": ["VIEW", "SHARE"]}
    printed = ok(trellis(dev, "workflows", "share", workflow_id, "--revoke", "user:bob",
                         "--grant", "role:ops=DELETE", "--json"))  # fmt: skip
    assert grants(dev, workflow_id) == {"role:ops": ["VIEW", "DELETE"]}
    assert printed == api(dev, f"/workflows/{workflow_id}/permissions").text + "\n"
    listed = ok(trellis(dev, "workflows", "share", workflow_id))
    assert "role:ops" in listed and "VIEW, DELETE" in listed and "user:bob" not in listed


def test_share_refused_changes_no_grant(dev: DevProcess, tmp_path: Path) -> None:
    workflow_id = applied(dev, tmp_path)
    ok(trellis(dev, "workflows", "share", workflow_id, "--grant", "user:bob=EDIT"))
    # A permission or a principal the API refuses was its 400 (exit 1, naming
    # `grants[0].permissions`): now a usage error naming the flag, nothing sent.
    for args, says in (
        (("--grant", "user:carol=OWN", "--revoke", "user:bob"),
         "Invalid value for --grant: OWN in 'user:carol=OWN': a permission is one of VIEW, "
         "EDIT, DELETE, SHARE"),
        (("--grant", "carol=VIEW"),
         "Invalid value for --grant: 'carol' is not a principal: user:ID or role:NAME"),
        (("--revoke", "bob"),
         "Invalid value for --revoke: 'bob' is not a principal: user:ID or role:NAME"),
        (("--grant", "user:carol"), "'user:carol' is not PRINCIPAL=PERMISSION"),
    ):  # fmt: skip
        assert says in refused(trellis(dev, "workflows", "share", workflow_id, *args), 2), args
    owner = trellis(dev, "workflows", "share", workflow_id, "--grant", "user:dev=VIEW")
    assert "user:dev owns the workflow" in refused(owner, 1)
    assert grants(dev, workflow_id) == {"user:bob": ["VIEW", "EDIT"]}
    unknown = trellis(dev, "workflows", "share", "no-such-workflow")
    assert (
        refused(unknown, 1)
        == "Error: 404 resource_not_found: Workflow 'no-such-workflow' not found"
    )


def test_paging_past_the_apis_limits_is_a_usage_error_naming_the_flag(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Checked by the API alone: exit 1 and its 400 naming `perPage`, not the flag.
    workflow_id = applied(dev, tmp_path)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    for command in (("workflows", "list"), ("runs", "list", workflow_id),
                    ("runs", "children", run_id), ("approvals",)):  # fmt: skip
        for flag, value, says in (
            ("--per-page", "0", "0 is not in the range 1<=x<=100"),
            ("--per-page", "101", "101 is not in the range 1<=x<=100"),
            ("--per-page", "-1", "-1 is not in the range 1<=x<=100"),
            ("--page", "0", "0 is not in the range 1<=x<=1000000"),
            ("--page", "1000001", "1000001 is not in the range 1<=x<=1000000"),
        ):
            error = refused(trellis(dev, *command, flag, value), 2)
            assert f"Error: Invalid value for '{flag}': {says}." in error, command
        ok(trellis(dev, *command, "--per-page", "100", "--page", "1000000"))


def test_schedules_timing_is_checked_before_anything_is_sent(
    dev: DevProcess, tmp_path: Path
) -> None:
    # Neither, both, or a zero interval was the API's 400 naming `intervalSeconds`.
    workflow_id = applied(dev, tmp_path)
    for args, says in (
        ((), "Error: give --cron EXPR or --interval-seconds N: when it fires"),
        (("--cron", "@daily", "--interval-seconds", "60"),
         "Error: --cron and --interval-seconds: give one (a schedule has one)"),
        (("--interval-seconds", "0"),
         "Error: Invalid value for '--interval-seconds': 0 is not in the range "
         "1<=x<=31622400."),
    ):  # fmt: skip
        result = trellis(dev, "schedules", "create", workflow_id, *args)
        assert refused(result, 2).endswith(says), args
    assert api(dev, f"/workflows/{workflow_id}/schedules").json()["schedules"] == []
    given = ("--interval-seconds", "3600", "--paused", "--json")
    created = json.loads(ok(trellis(dev, "schedules", "create", workflow_id, *given)))
    both = trellis(dev, "schedules", "update", created["id"], "--cron", "@daily",
                   "--interval-seconds", "60")  # fmt: skip
    assert refused(both, 2).endswith("--cron and --interval-seconds: give one (a schedule has one)")
    assert schedule(dev, created["id"])["intervalSeconds"] == 3600


def test_token_with_a_lifetime_not_above_zero_is_a_usage_error(dev: DevProcess) -> None:
    # Refused, but with exit code 1 (as a failed start), not 2.
    for ttl in ("0", "-5"):
        result = trellis(dev, "token", "--sub", "ada", "--scopes", "workflows-read",
                         "--ttl", ttl, TRELLIS_JWT_SECRET="s" * 32)  # fmt: skip
        assert f"Invalid value for '--ttl': {ttl} is not in the range x>=1" in refused(result, 2)


def test_the_delete_prompt_escapes_a_control_character_once(dev: DevProcess) -> None:
    # The name went through clean() and then repr(): `\x1b` was shown as `\\x1b`. Names
    # hold no control character now (a 400), but a bidi override is a format character a
    # name may hold, and the CLI escapes it the same way.
    created = httpx.post(
        f"{dev.api_url}/api/v1/workflows",
        json={"name": f"evil\u202e-{uuid.uuid4().hex[:8]}",
              "nodes": [{"name": "S", "nodeType": "step", "executorKey": "builtin:echo"}]},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    kept = on_a_terminal(dev, "n\n", "workflows", "delete", created.json()["id"])
    assert "Delete workflow 'evil\\u202e-" in kept.stderr, kept.stderr
    assert "\\\\u202e" not in kept.stderr and "\u202e" not in kept.stderr


def test_a_page_past_the_last_says_so(dev: DevProcess, tmp_path: Path) -> None:
    # The title read "page 99 of 1".
    workflow_id = applied(dev, tmp_path)
    listed = ok(trellis(dev, "workflows", "list", "--query", workflow_id[:8], "--page", "99"))
    assert "page 99, past the last (1)" in listed and "of 1" not in listed, listed
    runs = ok(trellis(dev, "runs", "list", workflow_id, "--page", "99"))
    assert "runs (0; page 99, past the last (1))" in runs, runs
    assert "runs (0; page 1 of 1)" in ok(trellis(dev, "runs", "list", workflow_id))


def test_retry_says_how_to_follow_the_child_run(dev: DevProcess, tmp_path: Path) -> None:
    # rerun and replay said "follow it with: trellis runs watch …"; retry did not.
    workflow_id = applied(dev, tmp_path, gate=True)
    run_id = json.loads(ok(trellis(dev, "runs", "start", workflow_id, "--json")))["runId"]
    wait_for_gate(dev, run_id)
    ok(trellis(dev, "runs", "cancel", run_id))
    deadline = time.monotonic() + 30
    while api(dev, f"/runs/{run_id}").json()["status"] != "cancelled":
        assert time.monotonic() < deadline, "the run was not cancelled"
        time.sleep(0.2)
    said = ok(trellis(dev, "runs", "retry", run_id)).splitlines()
    child = said[0].removeprefix("retry started: run ").split()[0]
    # As rerun and replay say it: its status and its parent ("retry started: run …" alone).
    assert said == [
        f"retry started: run {child} (pending), a child of run {run_id}",
        f"follow it with: trellis runs watch {child}",
    ]
    ok(trellis(dev, "runs", "cancel", child))


def test_apply_finds_a_workflow_by_its_name_as_the_api_keeps_it(
    dev: DevProcess, tmp_path: Path
) -> None:
    # The API keeps a name composed and trimmed: a file naming it with a combining accent
    # and a space after it was not found again, and its second apply was a 409.
    name = f"Cafe\u0301 {uuid.uuid4().hex[:6]} "
    path = tmp_path / "cafe.yaml"
    step = {"id": "s", "name": "S", "nodeType": "step", "executorKey": "builtin:echo"}
    path.write_text(yaml.safe_dump({"name": name, "nodes": [step]}, allow_unicode=True))
    first = json.loads(ok(trellis(dev, "workflows", "apply", "-f", str(path), "--json")))
    assert first["name"] == name.replace("e\u0301", "\u00e9").strip()
    again = ok(trellis(dev, "workflows", "apply", "-f", str(path)))
    assert "unchanged" in again, again
