"""Agent pools through the API: failover, round robin and skill match, recorded on the node run."""

from __future__ import annotations

import hashlib

from tests.builders import pool_step, retries
from tests.e2e.helpers import node_runs
from tests.events.sse import read_all
from tests.support.platform import Platform

ACCOUNT_MANAGERS = ["account-manager-v1", "account-manager-v2", "account-manager-fallback"]


async def test_failover_skips_a_dead_member_for_a_live_one(platform: Platform) -> None:
    run = await platform.run({"nodes": [pool_step("Create", ["dead-agent", "account-manager-v2"])]})

    assert run["status"] == "completed", run
    created = node_runs(run)["Create"]
    assert created["attempt"] == 1
    assert created["outputSnapshot"]["agent"] == "account-manager-v2"
    chosen = created["resolvedExecutor"]
    assert chosen["kind"] == "a2a" and chosen["key"] == "account-manager-v2"
    assert chosen["poolIndex"] == 1
    assert chosen["strategy"] == "failover"
    assert chosen["reason"].startswith("failover:")
    assert "dead-agent" in chosen["reason"]


async def test_failover_moves_past_a_failing_member_within_one_attempt(
    platform: Platform,
) -> None:
    run = await platform.run(
        {"nodes": [pool_step("Create", ["failing-agent", "account-manager-fallback"])]}
    )

    assert run["status"] == "completed", run
    created = node_runs(run)["Create"]
    assert created["attempt"] == 1
    assert created["resolvedExecutor"]["key"] == "account-manager-fallback"
    assert created["resolvedExecutor"]["poolIndex"] == 1
    assert "failing-agent failed" in created["resolvedExecutor"]["reason"]


async def test_a_pool_whose_members_all_fail_fails_naming_each(platform: Platform) -> None:
    run = await platform.run(
        {"nodes": [pool_step("Create", ["failing-agent", "dead-agent"], stepConfig=retries(0))]}
    )

    assert run["status"] == "failed", run
    error = node_runs(run)["Create"]["error"]
    assert "every agent of the pool failed" in error
    assert "failing-agent" in error and "dead-agent" in error


# `slow-agent` works `config.seconds`: here far past the step's timeout, a hung member.
HUNG = {"seconds": 600}


async def test_a_hung_member_costs_one_attempt_the_next_starts_after_it(
    platform: Platform,
) -> None:
    # Each attempt started at failing-agent again and hung on slow-agent until its
    # timeout: account-manager-fallback was never tried and the step failed.
    pool = ["failing-agent", "slow-agent", "account-manager-fallback"]
    config = {"maxRetries": 1, "timeoutSeconds": 5, "backoffBaseSeconds": 3}
    workflow_id = await platform.create(
        {"nodes": [pool_step("Create", pool, HUNG, stepConfig=config)]}
    )
    run_id = await platform.trigger(workflow_id)
    run = await platform.wait(workflow_id, run_id, within=40)

    assert run["status"] == "completed", run
    created = node_runs(run)["Create"]
    assert created["attempt"] == 2
    assert created["outputSnapshot"]["agent"] == "account-manager-fallback"
    chosen = created["resolvedExecutor"]
    assert (chosen["key"], chosen["poolIndex"]) == ("account-manager-fallback", 2)
    assert "slow-agent held the previous attempt until its timeout" in chosen["reason"]
    # The retry's start says how the first attempt failed: the member it waited on, the
    # one that failed before it, and the limit.
    events = await read_all(platform.api, f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events")
    retried = [m.json() for m in events if m.event == "node_started"][-1]
    assert retried["attempt"] == 2
    assert retried["previousError"].startswith(
        "step timed out (start-to-close, timeoutSeconds 5) waiting for A2A agent slow-agent"
        " (after: failing-agent failed: A2A agent 'failing-agent' failed:"
    ), retried


async def test_a_pool_s_last_attempt_timed_out_names_the_member_it_waited_on(
    platform: Platform,
) -> None:
    # The run said only "step timed out (start-to-close)", and the node run named no agent.
    config = {"maxRetries": 0, "timeoutSeconds": 3}
    pool = pool_step("Create", ["failing-agent", "slow-agent"], HUNG, stepConfig=config)
    run = await platform.run({"nodes": [pool]})

    assert run["status"] == "failed", run
    said = (
        "step timed out (start-to-close, timeoutSeconds 3) waiting for A2A agent slow-agent"
        " (after: failing-agent failed: A2A agent 'failing-agent' failed:"
    )
    assert run["errorSummary"].startswith(f"Node 'Create' failed: {said}"), run
    created = node_runs(run)["Create"]
    assert created["error"].startswith(said), created
    chosen = created["resolvedExecutor"]
    assert (chosen["kind"], chosen["key"], chosen["poolIndex"]) == ("a2a", "slow-agent", 1)


async def test_a_first_member_hung_within_the_first_second_is_named(
    platform: Platform,
) -> None:
    # Its name rode on the heartbeat a second in, after Temporal had timed the attempt
    # out: the error said only "step timed out (start-to-close, timeoutSeconds 1)".
    config = {"maxRetries": 0, "timeoutSeconds": 1}
    pool = pool_step("Create", ["slow-agent", "account-manager-fallback"], HUNG, stepConfig=config)
    run = await platform.run({"nodes": [pool]})

    assert run["status"] == "failed", run
    said = "step timed out (start-to-close, timeoutSeconds 1) waiting for A2A agent slow-agent"
    created = node_runs(run)["Create"]
    assert created["error"] == said, created
    chosen = created["resolvedExecutor"]
    assert (chosen["kind"], chosen["key"], chosen["poolIndex"]) == ("a2a", "slow-agent", 0)


async def test_a_first_member_hung_within_the_first_second_costs_one_attempt(
    platform: Platform,
) -> None:
    # The retry did not know which member had held it, started at slow-agent again and
    # hung there too.
    config = {"maxRetries": 1, "timeoutSeconds": 1, "backoffBaseSeconds": 0.05}
    pool = pool_step("Create", ["slow-agent", "account-manager-fallback"], HUNG, stepConfig=config)
    run = await platform.run({"nodes": [pool]})

    assert run["status"] == "completed", run
    created = node_runs(run)["Create"]
    assert created["attempt"] == 2
    chosen = created["resolvedExecutor"]
    assert (chosen["key"], chosen["poolIndex"]) == ("account-manager-fallback", 1)
    assert "slow-agent held the previous attempt until its timeout" in chosen["reason"]


async def test_a_failed_pool_step_names_the_agent_its_last_call_went_to(
    platform: Platform,
) -> None:
    run = await platform.run(
        {
            "nodes": [
                pool_step("Create", ["failing-agent", "rejecting-agent"], stepConfig=retries(0))
            ]
        }
    )

    assert run["status"] == "failed", run
    chosen = node_runs(run)["Create"]["resolvedExecutor"]
    assert (chosen["kind"], chosen["key"], chosen["poolIndex"]) == ("a2a", "rejecting-agent", 1)
    assert chosen["reason"].endswith("(the last agent tried: every agent of the pool failed)")


async def test_round_robin_starts_at_the_run_ids_hash(platform: Platform) -> None:
    workflow_id = await platform.create(
        {"nodes": [pool_step("Create", ACCOUNT_MANAGERS, {"poolStrategy": "round_robin"})]}
    )

    for _ in range(3):
        run_id = await platform.trigger(workflow_id)
        run = await platform.wait(workflow_id, run_id)
        assert run["status"] == "completed", run
        chosen = node_runs(run)["Create"]["resolvedExecutor"]
        start = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") % 3
        assert chosen["poolIndex"] == start
        assert chosen["key"] == ACCOUNT_MANAGERS[start]
        assert chosen["strategy"] == "round_robin"
        assert chosen["reason"] == f"round_robin: rotation starts at index {start} for this run"


async def test_skill_match_picks_the_agent_whose_skills_fit_the_task(platform: Platform) -> None:
    config = {
        "poolStrategy": "skill_match",
        "task": "Create a premium account with SSO",
        "tags": ["premium"],
    }
    run = await platform.run({"nodes": [pool_step("Create", ACCOUNT_MANAGERS, config)]})

    assert run["status"] == "completed", run
    chosen = node_runs(run)["Create"]["resolvedExecutor"]
    assert chosen["key"] == "account-manager-v2"
    assert chosen["poolIndex"] == 1
    assert chosen["strategy"] == "skill_match"
    assert chosen["reason"].startswith("skill_match: score ")
    assert "premium" in chosen["reason"] and "sso" in chosen["reason"]


async def test_skill_match_without_a_match_keeps_pool_order(platform: Platform) -> None:
    config = {"poolStrategy": "skill_match", "task": "Write a haiku"}
    run = await platform.run({"nodes": [pool_step("Create", ACCOUNT_MANAGERS, config)]})

    assert run["status"] == "completed", run
    chosen = node_runs(run)["Create"]["resolvedExecutor"]
    assert chosen["key"] == "account-manager-v1"
    assert chosen["reason"] == "skill_match: score 0 (matched nothing)"


async def test_the_pool_strategy_is_not_sent_to_the_agent(platform: Platform) -> None:
    run = await platform.run(
        {"nodes": [pool_step("Create", ACCOUNT_MANAGERS, {"poolStrategy": "failover", "x": 1})]}
    )

    assert run["status"] == "completed", run
    assert node_runs(run)["Create"]["outputSnapshot"]["config"] == {"x": 1}


async def test_an_unknown_pool_strategy_is_refused_when_saved(platform: Platform) -> None:
    # It used to fail each run's step (without retrying); now the definition is refused
    # (a definition stored before that still fails its step: tests/executors/test_pool.py).
    body = {
        "name": "pool with an unknown strategy",
        "nodes": [
            pool_step("Create", ACCOUNT_MANAGERS, {"poolStrategy": "random"}, stepConfig=retries(3))
        ],
    }
    response = await platform.api.post("/api/v1/workflows", json=body)
    assert response.status_code == 400, response.text
    assert "config.poolStrategy 'random' is unknown" in response.text
    listed = await platform.api.get("/api/v1/workflows", params={"search": "unknown strategy"})
    assert listed.json()["pagination"]["total"] == 0
