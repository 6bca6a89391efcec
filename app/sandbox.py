"""The workflow sandbox, with the code it runs per activation compiled once.

Temporal's sandbox runs each activation, and each payload's serialization context, by
`exec`-ing a short source string; `exec` compiles that string every time. Measured with
py-spy on our worker (docs/benchmarks.md), the compiling alone was ~6-10 % of its CPU.
This runner is the stock `SandboxedWorkflowRunner` (same restrictions, same per-run
isolation) whose instances exec those strings from a cache of compiled code objects.
It subclasses the SDK's private `_Instance`: a change there fails every workflow test.
"""

from __future__ import annotations

from functools import lru_cache
from types import CodeType
from typing import Any

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox._runner import _Instance


@lru_cache(maxsize=256)
def _compiled(source: str) -> CodeType:
    return compile(source, "<temporal sandbox>", "exec")


class _CompiledInstance(_Instance):
    def _run_code(self, code: str, **extra_globals: Any) -> None:
        # exec() takes a code object as well as a string: same globals, same effect.
        super()._run_code(_compiled(code), **extra_globals)  # type: ignore[arg-type]


class CompiledSandboxRunner(SandboxedWorkflowRunner):
    """`SandboxedWorkflowRunner`, compiling the sandbox's per-activation code once."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _CompiledInstance(det, self.runner_class, self.restrictions)
