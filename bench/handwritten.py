"""The baselines: hand-written Temporal workflows doing the benchmark's trivial work.

What a Temporal user would write without Trellis: a loop of activity calls, or an
`asyncio.gather` of them. The activity echoes its config and input, like `builtin:echo`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

ECHO_ACTIVITY = "bench_echo"
TIMEOUT = timedelta(seconds=30)


@dataclass
class EchoInput:
    config: dict[str, Any]
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class BatchInput:
    """`steps` echo calls, as regular or local activities."""

    steps: int
    local: bool = False
    input: dict[str, Any] = field(default_factory=dict)


@activity.defn(name=ECHO_ACTIVITY)
async def bench_echo(inp: EchoInput) -> dict[str, Any]:
    """Return what it received, as `builtin:echo` does."""
    return {"config": inp.config, "input": inp.input}


async def _echo(index: int, inp: BatchInput) -> dict[str, Any]:
    arg = EchoInput(config={"text": f"step {index}"}, input=inp.input)
    if inp.local:
        result: dict[str, Any] = await workflow.execute_local_activity(
            ECHO_ACTIVITY, arg, result_type=dict, start_to_close_timeout=TIMEOUT
        )
    else:
        result = await workflow.execute_activity(
            ECHO_ACTIVITY, arg, result_type=dict, start_to_close_timeout=TIMEOUT
        )
    return result


@workflow.defn(name="BenchSequence")
class BenchSequence:
    @workflow.run
    async def run(self, inp: BatchInput) -> Any:
        output: Any = None
        for i in range(inp.steps):
            output = await _echo(i, inp)
        return output


@workflow.defn(name="BenchParallel")
class BenchParallel:
    @workflow.run
    async def run(self, inp: BatchInput) -> list[Any]:
        return list(await asyncio.gather(*(_echo(i, inp) for i in range(inp.steps))))


WORKFLOWS = [BenchSequence, BenchParallel]
ACTIVITIES = [bench_echo]
