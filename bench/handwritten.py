"""The baselines: hand-written Temporal workflows doing the same work as our steps.

What a Temporal user would write without Trellis: a loop of activity calls, an
`asyncio.gather` of them, or an update that releases a wait. The activities make the
same calls our executors make: the MCP `echo` (or `sleepy`) tool through the official
`mcp` SDK over one session shared by the worker, the A2A echo agent through `a2a-sdk`, a plain
activity that returns at once (`builtin:delay` 0 s), or an echo as a local activity.
Each call carries what ours carries: the run's identity and an idempotency key
(`StepCall.request_meta`), and for A2A the step's context with the previous call's
output, so the tool or agent gets the same request and does the same work
(tests/executors/test_baseline_calls.py).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from a2a.client import Client as A2AClient
    from a2a.helpers import new_data_part
    from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest, TaskState
    from google.protobuf.json_format import MessageToDict
    from mcp import Client as McpClient

    from activities.executors.base import IDEMPOTENCY_META_KEY
    from temporal_workflows.scope import Scope
    from temporal_workflows.step_runner import executor_context

TIMEOUT = timedelta(seconds=30)
Kind = Literal["mcp", "mcp-slow", "a2a", "plain", "local"]
ACTIVITY = {
    "mcp": "hand_mcp_echo",
    "mcp-slow": "hand_mcp_sleepy",
    "a2a": "hand_a2a_echo",
    "plain": "hand_plain",
}
# What the MCP `sleepy` tool is asked to sleep, on both sides (bench.scenarios).
SLEEPY_SECONDS = 0.2
LOCAL_ECHO = "hand_local_echo"
APPROVE = "approve"


@dataclass
class EchoInput:
    text: str
    input: dict[str, Any] = field(default_factory=dict)
    # The previous call's output: a chain hands it on, as our steps' context does.
    previous: Any = None


@dataclass
class BatchInput:
    """`steps` calls of one kind, one after another or all at once."""

    steps: int
    kind: Kind = "mcp"
    input: dict[str, Any] = field(default_factory=dict)


@dataclass
class ApproveInput:
    step_id: str


class HandActivities:
    """Holds the worker's one MCP session and A2A client, as a Temporal user would."""

    def __init__(self, mcp: McpClient, a2a: A2AClient) -> None:
        self._mcp = mcp
        self._a2a = a2a

    @activity.defn(name=ACTIVITY["mcp"])
    async def mcp_echo(self, inp: EchoInput) -> Any:
        return await self._call_tool("echo", {"text": inp.text})

    @activity.defn(name=ACTIVITY["mcp-slow"])
    async def mcp_sleepy(self, inp: EchoInput) -> Any:
        return await self._call_tool("sleepy", {"seconds": SLEEPY_SECONDS})

    async def _call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = await self._mcp.call_tool(tool, arguments, meta=_request_meta())
        if result.is_error:
            raise RuntimeError(f"the {tool} tool failed")
        if result.structured_content is not None:
            return result.structured_content
        return [getattr(c, "text", None) for c in result.content]

    @activity.defn(name=ACTIVITY["a2a"])
    async def a2a_echo(self, inp: EchoInput) -> Any:
        info = activity.info()
        run = {
            "runId": info.workflow_id,
            "workflowId": info.workflow_type,
            "nodeId": info.activity_id,
            "nodeName": inp.text,
            "nodeRunId": f"{info.workflow_id}.{info.activity_id}",
            "attempt": info.attempt,
        }
        config = {"text": inp.text}
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[new_data_part({"config": config, "context": _context(inp), "run": run})],
            metadata=_request_meta(),
        )
        # Like the product, it returns the agent's artifact as the stream carried it, and
        # reads the stream to its end (the server ends it at the task's last event), which
        # leaves the connection to the next call.
        artifacts: list[Any] = []
        state = TaskState.TASK_STATE_UNSPECIFIED
        async for event in self._a2a.send_message(SendMessageRequest(message=message)):
            if event.HasField("task"):
                state = event.task.status.state
                # A task event is the whole task so far.
                artifacts = [MessageToDict(p.data) for a in event.task.artifacts for p in a.parts]
            if event.HasField("artifact_update"):
                artifacts += [MessageToDict(p.data) for p in event.artifact_update.artifact.parts]
            if event.HasField("status_update"):
                state = event.status_update.status.state
        if state == TaskState.TASK_STATE_COMPLETED:
            return artifacts
        if state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED):
            raise RuntimeError("the agent failed")
        raise RuntimeError("the agent's stream ended early")

    @activity.defn(name=ACTIVITY["plain"])
    async def plain(self, inp: EchoInput) -> Any:
        await asyncio.sleep(0)
        return {"slept": 0}

    def all(self) -> list[Any]:
        return [self.mcp_echo, self.mcp_sleepy, self.a2a_echo, self.plain, local_echo]


def _context(inp: EchoInput) -> dict[str, Any]:
    """The context our interpreter hands a step of the benchmark's runs, built the same way."""
    scope = Scope(input=inp.input, additional_data={}, session_state={})
    scope.previous_step_content = inp.previous
    return executor_context(scope.variables())


def _request_meta() -> dict[str, Any]:
    """The run's identity and an idempotency key, as our executors send with every call
    (`StepCall.request_meta`), here from the activity's own ids."""
    info = activity.info()
    node_run_id = f"{info.workflow_id}.{info.activity_id}"
    return {
        IDEMPOTENCY_META_KEY: node_run_id,
        "trellis/runId": info.workflow_id,
        "trellis/nodeRunId": node_run_id,
        "trellis/attempt": info.attempt,
    }


@activity.defn(name=LOCAL_ECHO)
async def local_echo(inp: EchoInput) -> dict[str, Any]:
    """Return what it received, as `builtin:echo` does."""
    return {"text": inp.text, "input": inp.input}


async def _call(index: int, inp: BatchInput, previous: Any = None) -> Any:
    arg = EchoInput(text=f"step {index}", input=inp.input, previous=previous)
    if inp.kind == "local":
        return await workflow.execute_local_activity(
            LOCAL_ECHO, arg, start_to_close_timeout=TIMEOUT
        )
    return await workflow.execute_activity(ACTIVITY[inp.kind], arg, start_to_close_timeout=TIMEOUT)


@workflow.defn(name="BenchSequence")
class BenchSequence:
    @workflow.run
    async def run(self, inp: BatchInput) -> Any:
        output: Any = None
        for i in range(inp.steps):
            output = await _call(i, inp, output)
        return output


@workflow.defn(name="BenchParallel")
class BenchParallel:
    @workflow.run
    async def run(self, inp: BatchInput) -> list[Any]:
        return list(await asyncio.gather(*(_call(i, inp) for i in range(inp.steps))))


@workflow.defn(name="BenchGate")
class BenchGate:
    """Waits for an approval Update, then does its one (pure) step and ends."""

    def __init__(self) -> None:
        self._approved = False

    @workflow.run
    async def run(self, inp: BatchInput) -> Any:
        await workflow.wait_condition(lambda: self._approved)
        return {"text": "approved", "input": inp.input}

    @workflow.update(name=APPROVE)
    async def approve(self, inp: ApproveInput) -> str:
        self._approved = True
        return inp.step_id

    @approve.validator
    def _check(self, inp: ApproveInput) -> None:
        if self._approved:
            raise ValueError("already approved")


WORKFLOWS = [BenchSequence, BenchParallel, BenchGate]
