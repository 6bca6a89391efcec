"""Payloads between the API, the interpreter workflow and its activities (one model each way)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from temporal_workflows.base import CamelModel
from temporal_workflows.definition import WorkflowSpec
from temporal_workflows.frames import SequenceFrame

WORKFLOW_TYPE = "TrellisRun"
# Activity names: the workflow refers to activities by these, never by import.
EXECUTE_STEP = "execute_step"
PLAN_STEP = "plan_step"
RECORD_BATCH = "record_batch"
# A field value the recording activity replaces with its own clock's time.
NOW = "$now"


class Identity(CamelModel):
    """Who triggered a run or made a decision: a verified caller, never a token.

    The contract's triggering identity (`triggering_user_id`, `triggering_username`,
    `triggering_scopes`); steps carry it so executors can mint a short-lived service
    token for the calls they make on the caller's behalf.
    """

    user_id: str
    username: str | None = None
    scopes: list[str] = Field(default_factory=list)
    roles: list[str] = Field(default_factory=list)
    # When the caller proved who they are (their token's `iat`, Unix seconds): service
    # tokens carry it as `auth_time`, so a downstream can tell how old the identity is.
    authenticated_at: int | None = None


class CachedOutput(CamelModel):
    """A node output carried over from a parent run (retry, node rerun)."""

    source_node_run_id: str
    output: Any = None


class LoopResume(CamelModel):
    """Where a top-level loop stood when its run continued as new (before `position`)."""

    node_run_id: str
    iteration: int
    outputs: list[Any] = Field(default_factory=list)


class ResumePoint(CamelModel):
    """Everything a run carries across continue-as-new (its history starts afresh)."""

    # Where the run stands (frames.py); runs continued before frames existed carry
    # `next_index` and `loop` instead.
    position: SequenceFrame | None = None
    next_index: int = 0
    loop: LoopResume | None = None
    session_state: dict[str, Any] = Field(default_factory=dict)
    # The top-level scope's own data.
    previous_step_content: Any = None
    previous_step_outputs: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)
    node_counts: dict[str, int] = Field(default_factory=dict)
    # The audit trail, which also tells a late decision on an old gate it is too late.
    resolved_requirements: list[dict[str, Any]] = Field(default_factory=list)
    rev: int = 0
    generation: int = 0


class RunInput(CamelModel):
    # A field this code does not know is refused, not dropped: it is a later release's
    # switch (a flag below), and a run started by that release replayed without it here
    # (a rollback) would run differently from its history, then fail back on that
    # release. Refused, its workflow task fails and is retried until a worker that knows
    # the field takes it: the run waits, nothing diverges. So a field is never removed:
    # every field is written into each run's start (defaults too), and its history would
    # no longer decode.
    model_config = ConfigDict(**CamelModel.model_config, extra="forbid")

    run_id: str
    workflow_id: str
    workflow_version: int
    definition: WorkflowSpec
    initial_input: dict[str, Any] = Field(default_factory=dict)
    trigger_source: str = "manual"
    parent_run_id: str | None = None
    additional_data: dict[str, Any] = Field(default_factory=dict)
    # Node id -> output to reuse instead of executing the node again.
    cached_outputs: dict[str, CachedOutput] = Field(default_factory=dict)
    # Node rerun: stop the run once this top-level node has finished.
    stop_after_node_id: str | None = None
    # Gate timeout for nodes whose humanReview sets none (None: wait indefinitely).
    default_gate_timeout_seconds: float | None = None
    # Stop starting nodes past this many history events or bytes (Temporal's hard limits:
    # 51,200 events, 50 MB); continue as new at a boundary past these (a fresh history).
    history_event_budget: int = 45_000
    history_byte_budget: int = 45_000_000
    continue_as_new_after_events: int = 10_000
    continue_as_new_after_bytes: int = 8_000_000
    # Set when this execution continues an earlier one of the same run.
    resume: ResumePoint | None = None
    # Who triggered the run (None: a schedule, or no identity was given).
    triggered_by: Identity | None = None
    # A step output nesting deeper than this fails the step (json_data.MAX_OUTPUT_DEPTH);
    # set by the starter. None: a run started before the limit replays without it.
    max_output_depth: int | None = None
    # A step output larger than this, as JSON, fails the step (TRELLIS_MAX_PAYLOAD_BYTES;
    # the step activity checks its own). Set by the starter for the steps evaluated in the
    # workflow. None: a run started before replays without it.
    max_output_bytes: int | None = None
    # A step output holding more JSON values than this fails the step (json_data.
    # MAX_DATA_VALUES; the step activity checks its own). Set by the starter for the steps
    # evaluated in the workflow. None: a run started before replays without it.
    max_output_values: int | None = None
    # Steps all CEL evaluations of one workflow task share (cel_budget.TaskBudget); set by
    # the starter. None: a run started before the shared budget existed replays without it.
    expression_task_steps: int | None = None
    # Steps one CEL evaluation may take (cel_budget.EVALUATION_STEPS); set by the starter.
    # None: a run started before replays with cel_budget.MAX_STEPS.
    expression_steps: int | None = None
    # Steps write the run's queued writes before their call (the outbox's hand-off); set by
    # the starter. False: a run started before hand-offs flushes as it did (no patch marker,
    # which would cost every run a marker and a search-attribute update).
    steps_write_queued: bool = False
    # The hand-off may carry settled node-run writes (an inline step's end, a gate-less
    # container's start: recorder.settled), so a loop of an inline step and a remote one,
    # or a parallel node of remote ones, starts them without a local activity first; set
    # by the starter. False: a run started before replays as it ran.
    steps_write_node_runs: bool = False
    # CEL evaluations pay for the size of their results (cel_budget.charge_result); set by
    # the starter. False: a run started before they did replays without it.
    results_charged: bool = False
    # CEL evaluations pay for converting the variables they read (cel_budget.
    # charge_variable): 300,000 numbers in a run's input took 2 s to convert for
    # `size(input.xs)`, Temporal's SDK took the task for deadlocked and retried it for
    # ever (the run stayed pending, a cancel never reached it); set by the starter. False:
    # a run started before replays as it ran.
    variables_charged: bool = False
    # The status search attribute is upserted once per workflow task, to the status the
    # run has when it blocks (status_attribute.py); set by the starter. False: a run
    # started before upserts every change, as it did.
    status_shown_per_task: bool = False
    # After a step evaluated inline, the run waits for the outbox to be written when a
    # full batch has queued (outbox.FLUSH_AT_WRITES): the local activity ends the
    # activation, so a thousand inline steps are not one activation that Temporal's SDK
    # takes as deadlocked past 2 s; set by the starter. False: a run started before runs
    # them as it did.
    inline_steps_yield: bool = False
    # A step's gate decided by a rejection closes its node run: `cancelled` when the run
    # is cancelled (onReject/onTimeout cancel), `failed` when retries ran out or a
    # reviewer's retry replaces it with a new node run; set by the starter. False: a run
    # started before leaves it as it did (awaiting_approval), replaying as it ran.
    rejected_gates_close_node_runs: bool = False
    # Templates write objects and lists in their text as JSON with non-ASCII characters as
    # they are ("é", not "\u00e9"); set by the starter. False: a run started before renders
    # as it did, replaying as it ran.
    templates_keep_unicode: bool = False
    # Node runs and gates carry the innermost map item and loop iteration through any
    # containers between (a gate inside a loop its iteration, not only an iteration
    # review); set by the starter. False: a run started before records them as it did,
    # so its queued writes keep their sizes and its hand-offs (decided by size) replay as
    # they ran.
    deep_placement: bool = False
    # A cancelled container records what it knew and a reviewer's reason, and a failed or
    # cancelled one no output; set by the starter. False: as before, for the same reason.
    container_ends_complete: bool = False
    # The node events of a step that starts and ends in the workflow (an inline built-in,
    # a template that failed) carry `attempt` 1, as a remote step's do; set by the starter.
    # False: a run started before logs them as it did (deep_placement's reason).
    inline_events_attempt: bool = False
    # The branch scopes in `resume` hold only what each branch changed (frames.ScopeState);
    # set by the execution that continues the run as new, whichever code started it (their
    # size decides nothing the workflow does, so old runs take it too). Nothing reads it:
    # it makes an older worker, which would take a branch's uncarried previous_step_content
    # for null, refuse the input rather than run on with it.
    branch_scopes_relative: bool = False
    # The most bytes of step inputs in flight at once (step_inputs.py): every step carries
    # the run context, and a map of 500 items over a 10 KB input put past gRPC's 4 MiB in
    # one workflow task (Temporal terminated the run); set by the starter. None: a run
    # started before schedules its steps as it did.
    step_input_bytes: int | None = None
    # Payloads this large and larger are kept in the store (TRELLIS_PAYLOAD_OFFLOAD_BYTES,
    # as the starter's data converter has it): such a step input counts as its claim. None:
    # none is offloaded.
    payload_offload_bytes: int | None = None
    # A map or parallel runs its branches from a pool of maxConcurrency tasks, each forking
    # a branch's scope as it starts (branch_pool.py), not a task and a scope per branch in
    # its first activation, which took a 3,000-item map past the SDK's 2 s deadlock limit;
    # set by the starter. False: a run started before schedules its branches as it did.
    branches_pooled: bool = False


class RunResult(CamelModel):
    status: str
    final_output: Any = None
    error_summary: str | None = None


class RunProjection(CamelModel):
    """A change to the run record, applied when `rev` is not older than the stored one."""

    run_id: str
    workflow_id: str
    rev: int
    changes: dict[str, Any]
    # Optional entry for the run's event log (the live stream).
    event: dict[str, Any] | None = None
    # Unread: every run write is now applied only over an older rev (activities/
    # projections.py). Kept so the inputs of histories recorded with it still decode.
    newer_only: bool = False


class NodeRunProjection(CamelModel):
    """Node-run fields to merge (rev-guarded), with the events they log."""

    run_id: str
    workflow_id: str
    record: dict[str, Any]
    events: list[dict[str, Any]] = Field(default_factory=list)


class ProjectionBatch(CamelModel):
    """Read-model writes in the order the workflow made them (run changes and node runs)."""

    runs: list[RunProjection] = Field(default_factory=list)
    node_runs: list[NodeRunProjection] = Field(default_factory=list)
    # The interleaving of the two lists: "r" takes the next run write, "n" the next node run.
    order: str = ""
    # The outbox's sequence number of the first write (the others follow in `order`): with
    # the Temporal run id it keys the batch's events, so a batch written again (a workflow
    # task that ran twice) logs each event once. None: unkeyed (a batch made before keys).
    first_seq: int | None = None


class StepInput(CamelModel):
    """What the step activity needs to run one step node once (all attempts)."""

    run_id: str
    workflow_id: str
    node_run_id: str
    node_id: str
    node_name: str
    executor_key: str | None = None
    a2a_pool: list[str] = Field(default_factory=list)
    # The node's config with templates rendered.
    config: dict[str, Any] = Field(default_factory=dict)
    # The run context the step sees (input, previous_step_content, ...).
    context: dict[str, Any] = Field(default_factory=dict)
    # Who triggered the run, for the service token of downstream calls (None: send none).
    triggered_by: Identity | None = None
    # Run writes the workflow queued, written by the activity before the call (saves a
    # local activity holding the workflow task open; see the outbox's hand-off).
    writes_before: ProjectionBatch | None = None
    # Attempts earlier activities of this node run made, the last of them lost with its
    # worker (step_runner's reruns): this activity's attempts count on from there.
    attempts_before: int = 0
    # What the last of those activities sent with its last heartbeat: work it started (an
    # A2A task, say) that this one can pick up rather than start again.
    earlier_progress: dict[str, Any] | None = None
    # Where the node run sits inside its container (placement.py's fields); None: top level.
    placement: dict[str, Any] | None = None


class StepPlan(CamelModel):
    """Which executor a pool step will try first and why (for the operator's view)."""

    resolved_executor: dict[str, Any] | None = None


class StepOutput(CamelModel):
    output: Any = None
    attempt: int = 1
    resolved_executor: dict[str, Any] | None = None
    # The attempt's wall-clock times (they keep the workflow's own timestamps in order).
    started_at: str | None = None
    finished_at: str | None = None
    # The input's writes_before are in the store.
    wrote_before: bool = False


# Update and query names (the API calls them by name).
DECIDE = "decide"
PAUSE = "pause"
RESUME = "resume"
PENDING_REQUIREMENTS = "pending_requirements"

# The ApplicationError types the workflow's update validators and handlers raise; the API
# maps each to one HTTP status (app/errors.py).
NOT_FOUND_ERROR = "NotFound"
INVALID_ERROR = "InvalidRequest"
CONFLICT_ERROR = "Conflict"
# The detail of a decision refused because its gate is not open in the workflow: the API
# waits a little when the store shows it open (app/services/controls.py).
GATE_NOT_OPEN = "gate_not_open"
# The detail key of a refused decision's problems (`[{"path", "message"}]`): the API's
# error `details`.
PROBLEMS = "problems"
# The error type a failed run ends with.
RUN_FAILED_ERROR = "RunFailed"


class ControlRequest(CamelModel):
    # The caller's sub (controls recorded before callers were authenticated say "anonymous").
    requested_by: str | None = None


class ControlResult(CamelModel):
    run_id: str
    status: str
