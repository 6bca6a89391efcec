"""Agent pools: pick which A2A agent of a step's `a2aPool` runs it, by `config.poolStrategy`.

- `failover` (default): pool order; agents whose card is down are skipped, a failed call
  moves on to the next agent within the same attempt.

Whatever the strategy, an attempt that a member held until its timeout (it never
answered) hands its next attempt the members after that one first: the agent it waited
on is named in the heartbeat details (`waitingFor`, and `a2aPool` for the next attempt),
so a hung member costs one attempt, not all of them.
- `round_robin`: the same, starting at an index derived from a hash of the run id, so
  runs spread over the pool and retries of one run start at the same agent.
- `skill_match`: agents ordered by how well their card's skills match `config.task`,
  `config.message` and `config.tags` (ties keep pool order), then failover. The scoring
  (`score_skills`) is docs/executors.md's "Pools": a tag's words are task words too.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, replace
from typing import Any

from activities.executors.a2a import A2AExecutor
from activities.executors.base import (
    PermanentError,
    StepCall,
    StepOutcome,
    TransientError,
    called,
)
from activities.executors.catalog import Catalog
from temporal_workflows.retry import CALLING_KEY
from temporal_workflows.validation import POOL_STRATEGIES

STRATEGIES = POOL_STRATEGIES
_WORD = re.compile(r"[a-z0-9]+")
_TAG_WEIGHT, _NAME_WEIGHT, _TEXT_WEIGHT = 3, 2, 1
# The heartbeat detail naming the member an attempt waits on: {"waitingOn", "deadline"}.
POOL_PROGRESS_KEY = "a2aPool"
# How much of each failed member's error the text of what an attempt waits for repeats.
_FAILURE_CHARS = 200


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
        held = _held_by(call, tried)
        if held is not None:
            # The earlier attempt waited on it until its timeout: the others go first.
            at = next(i for i, c in enumerate(tried) if c.name == held)
            tried = tried[at + 1 :] + tried[: at + 1]
        failures: list[tuple[str, Exception]] = []
        member: dict[str, Any] = {}
        for candidate in tried:
            member = _resolved(candidate, strategy)
            try:
                output = await self._a2a.call(_on_member(call, member, failures), candidate.name)
            except (TransientError, PermanentError) as exc:
                failures.append((candidate.name, exc))
                continue
            passed = [f"{n} failed" for n, _ in failures] + skipped
            if held is not None:
                passed.insert(0, f"{held} held the previous attempt until its timeout")
            if passed:
                member["reason"] += f" (after: {'; '.join(passed)})"
            return StepOutcome(output=output, resolved_executor=member)
        detail = "; ".join([f"{n}: {e}" for n, e in failures] + skipped)
        # The node run names the agent the last failed call went to.
        member["reason"] += " (the last agent tried: every agent of the pool failed)"
        # An agent skipped for a card down at the last refresh was not tried: it may be up
        # at the next attempt, so only a pool whose every agent refused for good is permanent.
        if failures and not skipped and all(isinstance(e, PermanentError) for _, e in failures):
            raise called(PermanentError(f"every agent of the pool failed: {detail}"), member)
        raise called(TransientError(f"every agent of the pool failed: {detail}"), member)

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


def _resolved(candidate: Candidate, strategy: str) -> dict[str, Any]:
    return {
        "kind": "a2a",
        "key": candidate.name,
        "poolIndex": candidate.index,
        "strategy": strategy,
        "reason": candidate.reason,
    }


def _on_member(call: StepCall, member: dict[str, Any], failures: list[Any]) -> StepCall:
    """The call as one member gets it: each heartbeat also names that member, what failed
    before it (the text a timeout's error repeats) and when the attempt times out."""
    waiting = f"A2A agent {member['key']}"
    if failures:
        said = [f"{n} failed: {_cut(str(e))}" for n, e in failures]
        waiting += f" (after: {'; '.join(said)})"
    own = {
        "waitingFor": waiting,
        CALLING_KEY: member,
        POOL_PROGRESS_KEY: {"waitingOn": member["key"], "deadline": call.deadline},
    }

    def beat(*details: Any) -> None:
        detail = details[0] if details and isinstance(details[0], dict) else {}
        call.heartbeat({**detail, **own})

    # Sent at once, not left to the beat a second in: a member may hang at once (its card
    # fetch included), and an attempt timed out before any beat named it left the error,
    # the node run and the next attempt's order without it. One round trip per member.
    call.heartbeat(own)
    return replace(call, heartbeat=beat)


def _held_by(call: StepCall, tried: list[Candidate]) -> str | None:
    """The member an earlier attempt waited on until its timeout, when it is in the pool.
    An attempt cut off before its timeout (its worker lost) is not counted: its member may
    still answer, and the next attempt picks up its task (docs/executors.md)."""
    earlier = call.earlier_progress.get(POOL_PROGRESS_KEY)
    if not isinstance(earlier, dict):
        return None
    name, deadline = earlier.get("waitingOn"), earlier.get("deadline")
    if not isinstance(deadline, int | float) or time.time() < deadline:
        return None
    return name if any(c.name == name for c in tried) else None


def _cut(text: str) -> str:
    return text if len(text) <= _FAILURE_CHARS else text[:_FAILURE_CHARS] + "…"


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
