"""The containers that run branches at once: parallel (one branch per child) and map (one
branch per item of a list, running the node's children in turn).

Branches share a bound on how many run at a time; the first failure stops the rest. When
the run continues as new, every branch says where it stood (`BranchFrame`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from temporal_workflows import expressions, stop_reasons
    from temporal_workflows.branch_pool import run_pooled, suspended_branch
    from temporal_workflows.continuation import Continuation, Suspended
    from temporal_workflows.contracts import RunInput
    from temporal_workflows.definition import WorkflowNode
    from temporal_workflows.frames import BranchFrame, MapFrame, ParallelFrame
    from temporal_workflows.inline_slices import SliceCutter
    from temporal_workflows.outcomes import NodeFailed, RunStopped
    from temporal_workflows.placement import Placement
    from temporal_workflows.recorder import RunRecorder
    from temporal_workflows.scope import Scope

if TYPE_CHECKING:
    from temporal_workflows.dispatcher import Dispatcher

BRANCH_WRITES_PATCH = "parallel-takes-what-each-branch-set"

# One branch: runs in its own scope, from its frame when resuming; returns its output.
Branch = Callable[[Scope, BranchFrame | None], Awaitable[Any]]


@dataclass
class FanOut:
    inp: RunInput
    dispatcher: Dispatcher
    recorder: RunRecorder
    continuation: Continuation
    # A map's itemsCel may first wait for a new slice (inline_slices.py).
    cutter: SliceCutter

    async def parallel(
        self,
        node: WorkflowNode,
        scope: Scope,
        node_run_id: str,
        frame: ParallelFrame | None,
        known: dict[str, Any],
    ) -> tuple[Any, Any]:
        """Every child at once (at most maxConcurrency); the first failure stops the rest."""
        known["children"] = [c.name for c in node.children]

        def branch(child: WorkflowNode) -> Branch:
            async def run(branch_scope: Scope, at: BranchFrame | None) -> Any:
                inside = at.inside if at is not None else None
                return await self.dispatcher.run_node(child, branch_scope, inside)

            return run

        scopes, results = await self._branches(
            node,
            scope,
            len(node.children),
            lambda index: branch(node.children[index]),
            frame.branches if frame is not None else None,
            lambda branches: ParallelFrame(node_run_id=node_run_id, branches=branches),
        )
        _take_branches(scope, scopes)
        output = {child.name: result for child, result in zip(node.children, results, strict=True)}
        return {"children": [c.name for c in node.children]}, output

    async def map(
        self,
        node: WorkflowNode,
        scope: Scope,
        node_run_id: str,
        frame: MapFrame | None,
        known: dict[str, Any],
    ) -> tuple[Any, Any]:
        """The children once per item of itemsCel's list, `item` and `index` in scope."""
        source = node.items_cel or ""
        known["itemsCel"] = source
        if frame is not None:
            items = frame.items
        else:
            await self.cutter.before_expression()
            items = _items(node, source, scope)
        known["items"] = len(items)

        def branch(index: int, item: Any) -> Branch:
            async def run(item_scope: Scope, at: BranchFrame | None) -> Any:
                item_scope.extra.update(item=item, index=index)
                outer = scope.placement if self.inp.deep_placement else None
                item_scope.placement = Placement.under(outer, node_run_id, item_index=index)
                sequence = at.sequence if at is not None else None
                return await self.dispatcher.run_sequence(node.children, item_scope, at=sequence)

            return run

        _, results = await self._branches(
            node,
            scope,
            len(items),
            lambda index: branch(index, items[index]),
            frame.branches if frame is not None else None,
            lambda branches: MapFrame(node_run_id=node_run_id, items=items, branches=branches),
        )
        return {"itemsCel": source, "items": len(items)}, results

    async def _branches(
        self,
        node: WorkflowNode,
        scope: Scope,
        count: int,
        branch: Callable[[int], Branch],
        resumed: list[BranchFrame] | None,
        suspended_as: Callable[[list[BranchFrame]], Any],
    ) -> tuple[list[Scope], list[Any]]:
        """Run the branches, bounded; their scopes and outputs, in branch order."""
        limit = node.max_concurrency or self.inp.definition.max_concurrency
        frames: list[BranchFrame | None] = list(resumed) if resumed else [None] * count
        if self.inp.branches_pooled:
            pooled = await run_pooled(
                count,
                lambda index, branch_scope, at: branch(index)(branch_scope, at),
                frames,
                scope,
                limit,
                self.continuation,
                self.recorder.flush_soon,
            )
            scopes, results, stops = pooled
        else:
            branches = [branch(i) for i in range(count)]
            scopes, results, stops = await self._all_at_once(limit, branches, frames, scope)
        if stops:
            raise stops[0]
        if any(isinstance(r, Suspended) for r in results):
            raise Suspended(suspended_as(_branch_frames(results, scopes, scope)))
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [s for s in scopes if s is not None], results

    async def _all_at_once(
        self,
        count_limit: int,
        branches: list[Branch],
        frames: list[BranchFrame | None],
        scope: Scope,
    ) -> tuple[list[Scope | None], list[Any], list[RunStopped]]:
        """Runs started before branch_pool.py: a task and a scope per branch at once, a
        semaphore letting `count_limit` run; they replay as they ran."""
        limit = asyncio.Semaphore(count_limit)
        scopes = [scope.fork() for _ in branches]
        reason = stop_reasons.enter_block()
        for branch_scope, at in zip(scopes, frames, strict=True):
            if at is not None and at.scope is not None:
                branch_scope.restore(at.scope)
        stops: list[RunStopped] = []
        tasks: list[asyncio.Task[Any]] = []
        continuation = self.continuation

        async def run(index: int) -> Any:
            stop_reasons.run_under(reason)  # its own task's context: this branch only
            at = frames[index]
            if at is not None and at.state == "done":
                return at.output
            async with limit:
                if stops:
                    return None  # a sibling failed: start nothing new
                if continuation.releasing:
                    raise Suspended(BranchFrame(state="waiting"))
                continuation.strands += 1
                try:
                    result = await branches[index](scopes[index], at)
                    # Siblings may hold the block for long: show this branch's records now.
                    self.recorder.flush_soon()
                    return result
                except Suspended as suspended:
                    suspended.frame = suspended_branch(suspended.frame, scopes[index], scope)
                    raise
                except RunStopped as stop:
                    if not stops:
                        stops.append(stop)
                        if isinstance(stop, NodeFailed):
                            reason.said = f"'{stop.node_name}' failed beside it"
                        for i, task in enumerate(tasks):
                            if i != index and not task.done():
                                task.cancel()
                    raise
                finally:
                    continuation.strands -= 1

        continuation.started_waiting()
        try:
            tasks.extend(asyncio.create_task(run(i)) for i in range(len(branches)))
            results = await asyncio.gather(*tasks, return_exceptions=True)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            continuation.stopped_waiting()
        return list(scopes), results, stops


def _take_branches(scope: Scope, branches: list[Scope]) -> None:
    """What each branch set becomes visible after the parallel. Runs before this rule took
    each branch's whole copy, so a later sibling's stale copy of a name hid what an earlier
    one set; they replay as they ran (the patch is asked only where the two differ)."""
    taken = scope.fork()
    for branch in branches:
        taken.take(branch)
    copied = dict(scope.previous_step_outputs)
    for branch in branches:
        copied.update(branch.previous_step_outputs)
    if taken.previous_step_outputs != copied and workflow.patched(BRANCH_WRITES_PATCH):
        for branch in branches:
            scope.take(branch)
        return
    scope.previous_step_outputs.update(copied)
    for branch in branches:
        scope.written.update(branch.written)


def _branch_frames(
    results: list[Any], scopes: list[Scope | None], scope: Scope
) -> list[BranchFrame]:
    frames: list[BranchFrame] = []
    for result, branch_scope in zip(results, scopes, strict=True):
        if isinstance(result, Suspended):
            frames.append(result.frame)
        elif isinstance(result, BaseException) or branch_scope is None:
            raise result if isinstance(result, BaseException) else RuntimeError("unstarted")
        else:
            state = branch_scope.state(scope)
            frames.append(BranchFrame(state="done", output=result, scope=state))
    return frames


def _items(node: WorkflowNode, source: str, scope: Scope) -> list[Any]:
    try:
        result = expressions.evaluation(source, scope.variables())
    except expressions.ExpressionError as exc:
        raise NodeFailed(node.name, str(exc)) from None
    if not isinstance(result.value, list):
        raise NodeFailed(node.name, result.not_yielding("itemsCel", "a list"))
    return result.value
