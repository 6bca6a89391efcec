"""A workflow that schedules one activity, for the sandbox runner's context test."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="shout")
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn(name="ContextProbe")
class ContextProbe:
    @workflow.run
    async def run(self, text: str) -> str:
        loud = await workflow.execute_activity(
            shout, text, start_to_close_timeout=timedelta(seconds=10)
        )
        return f"{loud}!"
