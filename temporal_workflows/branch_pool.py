"""Branches run by a pool of `limit` runners, each taking the next branch in index order.

A task, a forked scope and a closure per branch, all made in the block's first activation,
took a 3,000-item map past Temporal's 2 s deadlock limit on a loaded machine, though only
maxConcurrency ran at once (found by an outside audit). Here one activation starts at most
`limit` runners; a branch's scope is forked (and restored from its frame) when it starts.
Runs started before this replay the old way (RunInput.branches_pooled).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import stop_reasons
    from temporal_workflows.continuation import Continuation, Suspended
    from temporal_workflows.frames import BranchFrame, SequenceFrame
    from temporal_workflows.outcomes import NodeFailed, RunStopped
    from temporal_workflows.scope import Scope

# One branch's run in its scope: its output; raises RunStopped or Suspended as it ends so.
Runs = Callable[[int, Scope, BranchFrame | None], Awaitable[Any]]
# After a branch finishes: show its records without waiting for its siblings.
Finished = Callable[[], None]


async def run_pooled(
    count: int,
    runs: Runs,
    frames: list[BranchFrame | None],
    scope: Scope,
    limit: int,
    continuation: Continuation,
    finished: Finished,
) -> tuple[list[Scope | None], list[Any], list[RunStopped]]:
    """Each branch's scope (None: never started) and outcome (output or exception), in
    branch order, and the failure that stopped them, if any."""
    scopes: list[Scope | None] = [None] * count
    outcomes: list[Any] = [None] * count
    stops: list[RunStopped] = []
    reason = stop_reasons.enter_block()
    runners: list[asyncio.Task[None]] = []
    taken = 0

    def fork(index: int) -> Scope:
        branch_scope = scopes[index] = scope.fork()
        at = frames[index]
        if at is not None and at.scope is not None:
            branch_scope.restore(at.scope)
        return branch_scope

    async def one(slot: int, index: int) -> Any:
        at = frames[index]
        if at is not None and at.state == "done":
            fork(index)
            return at.output
        if continuation.releasing:
            return Suspended(BranchFrame(state="waiting"))
        branch_scope = fork(index)
        continuation.strands += 1
        try:
            result = await runs(index, branch_scope, at)
            finished()
            return result
        except Suspended as suspended:
            suspended.frame = suspended_branch(suspended.frame, branch_scope, scope)
            return suspended
        except RunStopped as stop:
            if not stops:
                stops.append(stop)
                if isinstance(stop, NodeFailed):
                    reason.said = f"'{stop.node_name}' failed beside it"
                for other, runner in enumerate(runners):
                    if other != slot and not runner.done():
                        runner.cancel()
            return stop
        finally:
            continuation.strands -= 1

    async def runner(slot: int) -> None:
        nonlocal taken
        stop_reasons.run_under(reason)  # its own task's context: its branches only
        first = True
        while taken < count and not stops:
            if not first:
                # The next branch starts a step later, as a semaphore's waiter did: what
                # ended this one (a gate's decision) is done with before it starts, so a
                # decision taken for the items waiting does not decide one arriving now.
                await asyncio.sleep(0)
                if taken >= count or stops:
                    break
            first = False
            index, taken = taken, taken + 1
            try:
                outcomes[index] = await one(slot, index)
            except asyncio.CancelledError:
                raise  # a sibling failed, or the block is cancelled: take no more
            except Exception as exc:  # raised in branch order, once the rest are done
                outcomes[index] = exc

    continuation.started_waiting()
    try:
        runners.extend(asyncio.create_task(runner(slot)) for slot in range(min(limit, count)))
        await asyncio.gather(*runners, return_exceptions=True)
    except asyncio.CancelledError:
        for task in runners:
            task.cancel()
        await asyncio.gather(*runners, return_exceptions=True)
        raise
    finally:
        continuation.stopped_waiting()
    return scopes, outcomes, stops


def suspended_branch(inside: Any, branch_scope: Scope, scope: Scope) -> BranchFrame:
    """A branch's frame from what it unwound with (a node's frame, or a sequence's)."""
    state = branch_scope.state(scope)
    if isinstance(inside, SequenceFrame):
        return BranchFrame(state="suspended", scope=state, sequence=inside)
    return BranchFrame(state="suspended", scope=state, inside=inside)
