"""The start-up benchmark's hand-written worker polls for this workflow and activity (in a
module of their own, as Temporal's sandbox wants workflows)."""

from __future__ import annotations

from temporalio import activity, workflow


@activity.defn
async def bare_step(value: str) -> str:
    return value


@workflow.defn
class BareWorkflow:
    @workflow.run
    async def run(self, value: str) -> str:
        return value
