"""The workflow sandbox, with the code it runs per activation compiled once.

Temporal's sandbox runs each activation, and each payload's serialization context, by
`exec`-ing a short source string; `exec` compiles that string every time. Measured with
py-spy on our worker (docs/benchmarks.md), the compiling alone was ~6-10 % of its CPU.
This runner is the stock `SandboxedWorkflowRunner` whose instances exec those strings
from a cache of compiled code objects, and answers the SDK's per-payload context lookups
without entering the sandbox. It subclasses the SDK's private `_Instance`: a change
there fails every workflow test.

Our own workflow package is passed through as well: every module of it but the two
workflow modules is imported through `imports_passed_through()` already, so this only
spares re-reading and re-running `interpreter.py` (and `schedule_trigger.py`) for every
new run (~10 % of the worker's CPU at 50 runs in flight). Both only call `workflow.*`.
"""

from __future__ import annotations

from functools import lru_cache
from types import CodeType
from typing import Any

from temporalio.converter import SerializationContext, StorageDriverStoreContext
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker._command_aware_visitor import CommandInfo
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.worker.workflow_sandbox._in_sandbox import InSandbox
from temporalio.worker.workflow_sandbox._runner import _Instance


@lru_cache(maxsize=256)
def _compiled(source: str) -> CodeType:
    return compile(source, "<temporal sandbox>", "exec")


class _CompiledInstance(_Instance):
    def _run_code(self, code: str, **extra_globals: Any) -> None:
        # exec() takes a code object as well as a string: same globals, same effect.
        super()._run_code(_compiled(code), **extra_globals)  # type: ignore[arg-type]

    # The SDK asks these of the instance for every payload of a workflow task, entering
    # the sandbox each time (~6 % of the worker's CPU on plain steps). Both are lookups
    # in the instance's own tables of pending commands: no workflow code runs, nothing
    # is imported, so they are asked directly.
    def get_serialization_context(
        self, command_info: CommandInfo | None
    ) -> SerializationContext | None:
        return self._in_sandbox.get_serialization_context(command_info)

    def get_external_store_context(
        self, command_info: CommandInfo | None
    ) -> StorageDriverStoreContext:
        return self._in_sandbox.get_external_store_context(command_info)

    @property
    def _in_sandbox(self) -> InSandbox:
        return self.globals_and_locals["__temporal_in_sandbox"]  # type: ignore[return-value]


PASSED_THROUGH = ("temporal_workflows",)


class CompiledSandboxRunner(SandboxedWorkflowRunner):
    """`SandboxedWorkflowRunner`, compiling the sandbox's per-activation code once."""

    def __init__(self) -> None:
        restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)
        super().__init__(restrictions=restrictions)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _CompiledInstance(det, self.runner_class, self.restrictions)
