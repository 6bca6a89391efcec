"""Agent pools: pick which A2A agent of a step's `a2aPool` runs it, by `config.poolStrategy`.

- `failover` (default): pool order; agents whose card is down are skipped, a failed call
  moves on to the next agent within the same attempt.
- `round_robin`: the same, starting at an index derived from a hash of the run id, so
  runs spread over the pool and retries of one run start at the same agent.
- `skill_match`: agents ordered by how well their card's skills match `config.task`,
  `config.message` and `config.tags` (ties keep pool order), then failover.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from activities.executors.a2a import A2AExecutor
from activities.executors.base import PermanentError, StepCall, StepOutcome, TransientError
from activities.executors.catalog import Catalog
from temporal_workflows.validation import POOL_STRATEGIES

STRATEGIES = POOL_STRATEGIES
_WORD = re.compile(r"[a-z0-9]+")
_TAG_WEIGHT, _NAME_WEIGHT, _TEXT_WEIGHT = 3, 2, 1


@dataclass(frozen=True)
class Candidate:
    index: int
    name: str
    reason: str


class PoolExecutor:
    """Runs a step on the first agent of its pool, in strategy order, that succeeds."""

    def __init__(self, catalog: Catalog, a2a: A2AExecutor) -> None:
        self._catalog = catalog
        self._a2a = a2a

    async def plan(self, call: StepCall) -> dict[str, Any]:
        """The agent this step will try first and why (shown as the activity's summary)."""
        strategy, candidates = await self._candidates(call)
        first = self._available(candidates)[0]
        return {
            "kind": "a2a",
            "key": first.name,
            "poolIndex": first.index,
            "strategy": strategy,
            "reason": first.reason,
        }

    async def execute(self, call: StepCall) -> StepOutcome:
        strategy, candidates = await self._candidates(call)
        return await self._first_success(call, strategy, candidates)

    def _available(self, candidates: list[Candidate]) -> list[Candidate]:
        up = [c for c in candidates if self._catalog.agent(c.name).status != "down"]
        # When every card says down the statuses may be stale: try them all anyway.
        return up or candidates

    async def _candidates(self, call: StepCall) -> tuple[str, list[Candidate]]:
        strategy = call.config.get("poolStrategy", "failover")
        if strategy not in STRATEGIES:
            raise PermanentError(
                f"unknown poolStrategy {strategy!r}; use one of: {', '.join(STRATEGIES)}"
            )
        unknown = [a for a in call.a2a_pool if not self._catalog.is_known_agent(a)]
        if unknown:
            raise PermanentError(f"a2aPool names unknown agent(s): {', '.join(unknown)}")
        if strategy == "skill_match":
            candidates = await self._by_skill(call)
        elif strategy == "round_robin":
            candidates = _rotation(call.a2a_pool, call.run_id)
        else:
            candidates = [
                Candidate(i, n, "failover: first available in pool order")
                for i, n in enumerate(call.a2a_pool)
            ]
        return strategy, candidates

    async def _first_success(
        self, call: StepCall, strategy: str, candidates: list[Candidate]
    ) -> StepOutcome:
        tried = self._available(candidates)
        skipped = [f"{c.name}: card down" for c in candidates if c not in tried]
        failures: list[tuple[str, Exception]] = []
        for candidate in tried:
            try:
                output = await self._a2a.call(call, candidate.name)
            except (TransientError, PermanentError) as exc:
                failures.append((candidate.name, exc))
                continue
            reason = candidate.reason
            if failures or skipped:
                passed = [f"{n} failed" for n, _ in failures] + skipped
                reason += f" (after: {'; '.join(passed)})"
            return StepOutcome(
                output=output,
                resolved_executor={
                    "kind": "a2a",
                    "key": candidate.name,
                    "poolIndex": candidate.index,
                    "strategy": strategy,
                    "reason": reason,
                },
            )
        detail = "; ".join([f"{n}: {e}" for n, e in failures] + skipped)
        # An agent skipped for a card down at the last refresh was not tried: it may be up
        # at the next attempt, so only a pool whose every agent refused for good is permanent.
        if failures and not skipped and all(isinstance(e, PermanentError) for _, e in failures):
            raise PermanentError(f"every agent of the pool failed: {detail}")
        raise TransientError(f"every agent of the pool failed: {detail}")

    async def _by_skill(self, call: StepCall) -> list[Candidate]:
        wanted = _query(call.config)
        scored: list[tuple[int, int, str, str]] = []
        for index, name in enumerate(call.a2a_pool):
            try:
                card = await self._a2a.card(name)
            except Exception:
                scored.append((0, index, name, "no card"))
                continue
            score, matched = score_skills(wanted, card.skills)
            scored.append((score, index, name, ", ".join(sorted(matched)) or "nothing"))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [Candidate(i, n, f"skill_match: score {s} (matched {m})") for s, i, n, m in scored]


def _rotation(pool: list[str], run_id: str) -> list[Candidate]:
    start = int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:8], "big") % len(pool)
    order = [(start + k) % len(pool) for k in range(len(pool))]
    return [
        Candidate(i, pool[i], f"round_robin: rotation starts at index {start} for this run")
        for i in order
    ]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def _query(config: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(words of task/message, tags) a node asks for."""
    text = " ".join(str(config.get(k) or "") for k in ("task", "message"))
    tags = config.get("tags") or []
    tag_list = [tags] if isinstance(tags, str) else [str(t) for t in tags]
    return _words(text) | {w for t in tag_list for w in _words(t)}, {t.lower() for t in tag_list}


def score_skills(wanted: tuple[set[str], set[str]], skills: Any) -> tuple[int, set[str]]:
    """Score a card's skills against a node's words and tags; return (score, matched terms)."""
    words, tags = wanted
    score, matched = 0, set()
    for skill in skills:
        skill_tags = {t.lower() for t in skill.tags}
        for tag in (tags | words) & skill_tags:
            score += _TAG_WEIGHT
            matched.add(tag)
        for word in words & (_words(skill.id) | _words(skill.name)):
            score += _NAME_WEIGHT
            matched.add(word)
        for word in words & _words(skill.description):
            score += _TEXT_WEIGHT
            matched.add(word)
    return score, matched
