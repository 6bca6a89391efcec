"""Agent pools: failover (including from a dead member), round robin, skill match."""

from __future__ import annotations

import pytest

from activities.executors.base import PermanentError, TransientError
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall


def pool_call(make_call: MakeCall, pool: list[str], **config: object):  # type: ignore[no-untyped-def]
    return make_call(None, dict(config), a2a_pool=pool)


async def test_failover_uses_the_first_agent_when_it_works(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(
        pool_call(make_call, ["account-manager-v1", "account-manager-v2"])
    )
    assert outcome.resolved_executor is not None
    assert outcome.resolved_executor["key"] == "account-manager-v1"
    assert outcome.resolved_executor["poolIndex"] == 0


async def test_failover_moves_from_a_dead_member_to_a_live_one(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    outcome = await registry.execute(
        pool_call(make_call, ["dead-agent", "failing-agent", "account-manager-fallback"])
    )
    resolved = outcome.resolved_executor
    assert resolved is not None
    assert (resolved["key"], resolved["poolIndex"]) == ("account-manager-fallback", 2)
    assert "failing-agent failed" in resolved["reason"] and "dead-agent" in resolved["reason"]
    assert outcome.output["agent"] == "account-manager-fallback"


async def test_pool_where_every_agent_fails_is_retryable(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(TransientError, match="every agent of the pool failed"):
        await registry.execute(pool_call(make_call, ["failing-agent", "input-agent"]))


async def test_pool_where_every_agent_rejects_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="every agent of the pool failed"):
        await registry.execute(pool_call(make_call, ["rejecting-agent"]))


async def test_pool_with_a_down_member_skipped_is_retryable_though_the_rest_reject(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    # dead-agent was skipped, not tried (its card was down at the last refresh): it may be
    # up at the next attempt, so the step's retries are not given up.
    with pytest.raises(TransientError, match="dead-agent: card down"):
        await registry.execute(pool_call(make_call, ["dead-agent", "rejecting-agent"]))


async def test_round_robin_start_depends_only_on_the_run(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    pool = ["account-manager-v1", "account-manager-v2", "account-manager-fallback"]
    chosen = set()
    for n in range(12):
        first = await registry.execute(
            make_call(None, {"poolStrategy": "round_robin"}, a2a_pool=pool, run_id=f"rr-{n}")
        )
        again = await registry.execute(
            make_call(None, {"poolStrategy": "round_robin"}, a2a_pool=pool, run_id=f"rr-{n}")
        )
        assert first.resolved_executor == again.resolved_executor
        assert first.resolved_executor is not None
        chosen.add(first.resolved_executor["key"])
    assert len(chosen) > 1


async def test_skill_match_picks_the_agent_whose_skills_fit(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    pool = ["account-manager-v1", "account-manager-v2", "account-manager-fallback"]
    outcome = await registry.execute(
        pool_call(make_call, pool, poolStrategy="skill_match", task="Create a premium SSO account")
    )
    assert outcome.resolved_executor is not None
    assert outcome.resolved_executor["key"] == "account-manager-v2"
    assert outcome.resolved_executor["reason"].startswith("skill_match: score")


async def test_skill_match_ties_keep_pool_order(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    pool = ["a2a-business-onboarding-agent", "a2a-standard-onboarding-agent"]
    outcome = await registry.execute(
        pool_call(make_call, pool, poolStrategy="skill_match", tags=["onboarding"])
    )
    assert outcome.resolved_executor is not None
    assert outcome.resolved_executor["key"] == "a2a-business-onboarding-agent"


async def test_unknown_strategy_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="unknown poolStrategy"):
        await registry.execute(pool_call(make_call, ["account-manager-v1"], poolStrategy="random"))
