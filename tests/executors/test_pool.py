"""Agent pools: failover (including from a dead member), round robin, skill match."""

from __future__ import annotations

import pytest

from activities.executors.base import PermanentError, TransientError
from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile
from activities.executors.registry import ExecutorRegistry
from tests.executors.conftest import MakeCall
from tests.peers.a2a_agents import AgentSpec, AgentStats, agents_app
from tests.peers.serving import ServedApp, free_port
from tests.support.loopback import LOOPBACK_ALLOWED


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


async def test_skill_match_scores_by_the_documented_formula(make_call: MakeCall) -> None:
    # An audit read docs/executors.md's formula as giving `stream` 3 here; the reason said
    # 6. The docs now state what is scored: the node's words are those of task, message
    # and tags; per skill, 3 for each word or tag equal to a skill tag, 2 for each word in
    # its id or name, 1 for each word in its description. `stream`: tag 3 + name 2 +
    # description 1 = 6; `multi` (a node tag, so a word too) 3 + 2 + 1 = 6, a tie, which
    # pool order breaks; `quick` 0.
    skills = {"quick": "quick answers", "stream": "stream answers", "multi": "multi answers"}
    specs = [AgentSpec(n, skills=((n, d, (n,)),)) for n, d in skills.items()]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    served = ServedApp(agents_app(specs, base, AgentStats()), port=port).start()
    agents = tuple(A2AAgentSpec(name=n, url=f"{base}/agents/{n}/") for n in skills)
    registry = ExecutorRegistry(Catalog(CatalogFile(agents=agents)), http_policy=LOOPBACK_ALLOWED)
    pool = ["quick", "stream", "multi"]
    try:
        outcome = await registry.execute(
            pool_call(
                make_call, pool, poolStrategy="skill_match", task="stream something", tags=["multi"]
            )
        )
    finally:
        await registry.close()
        served.stop()
    assert outcome.resolved_executor is not None
    assert outcome.resolved_executor["key"] == "stream"
    assert outcome.resolved_executor["reason"] == "skill_match: score 6 (matched stream)"


async def test_unknown_strategy_is_permanent(
    registry: ExecutorRegistry, make_call: MakeCall
) -> None:
    with pytest.raises(PermanentError, match="unknown poolStrategy"):
        await registry.execute(pool_call(make_call, ["account-manager-v1"], poolStrategy="random"))
