"""Starts under an `Idempotency-Key`: triggers and lineage (retry, node rerun, replay).

The key names the run: its id is derived from the workflow's id and the key
(`new_run_id`), so a repeat finds the run its first use recorded and is answered with
it (started now if its workflow never was), and concurrent first uses collide on one
record. A repeat must ask for what the first use asked for; anything else is 409, never
the first use's run (that would accept a request that never runs). A key whose run was
deleted from the store (run retention) while Temporal keeps its workflow is 409 too: no
run of that id can start again, and none is recorded.
"""

from __future__ import annotations

import json
from typing import Any

from activities.run_start import RunIdTaken, RunStarter, new_run_id, start_was_refused
from activities.store.records import RunRecord, WorkflowRecord
from app.errors import Conflict
from temporal_workflows.contracts import CachedOutput, Identity

# What a request asks for, under the wire names a 409 reports (a request names only the
# parts it decides; a lineage request's input and reuse list follow from its source run).
Asked = dict[str, Any]


def asked_of(run: RunRecord) -> Asked:
    """What the request that created `run` asked for."""
    return {
        "triggerSource": run.trigger_source,
        "parentRunId": run.parent_run_id,
        "nodeId": run.stop_after_node_id,
        "initialInput": run.initial_input,
        "resolvedDependencies": [d.model_dump() for d in run.resolved_dependencies],
        "triggeredBy": asker(run.triggered_by),
    }


def asker(identity: Identity | None) -> str | None:
    """Who asked, as a request under a key names them: a key is the caller's own, so
    another user's repeat is not answered with a run recorded as the first user's."""
    return identity.user_id if identity is not None else None


def require_same_request(run: RunRecord, asked: Asked) -> None:
    """Conflict (409) naming what differs, unless `run` was created by the request `asked`.

    As the IETF idempotency-key draft and payment APIs do: a key reused by mistake (a
    client bug) must not be answered with a run that is not what was asked for.
    """
    require_same(asked_of(run), asked, "run", run.id)


def require_same(first: Asked, asked: Asked, kind: str, made_id: str) -> None:
    """Conflict (409) naming what differs, unless `asked` is the request `first` (which
    made the `kind` `made_id`); schedules' keys (app/services/schedules.py) use it too."""
    differs = [
        name for name, sent in asked.items() if canonical(first.get(name)) != canonical(sent)
    ]
    if differs:
        raise Conflict(
            f"Idempotency-Key was first used for {kind} {made_id} with a different request "
            f"({', '.join(differs)} {'differs' if len(differs) == 1 else 'differ'}): repeat "
            "that request unchanged, or use a new "
            f"key for a new {kind}"
        )


def canonical(value: Any) -> str:
    """A request's part as one JSON string, keys sorted. JSON has one number type, so
    numbers equal in value are alike (`1` and `1.0`: a client library may send either);
    `true` is no number (Python's `True == 1` made it equal to `1`)."""
    return json.dumps(
        _numbers_by_value(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


def _numbers_by_value(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _numbers_by_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbers_by_value(v) for v in value]
    return value


async def repeated_run(
    starter: RunStarter, workflow: WorkflowRecord, key: str | None, asked: Asked
) -> RunRecord | None:
    """The run the key's first use recorded, if any, started now if it never was.

    One whose workflow never started (the API died between record and start, or Temporal
    refused it with a 503) is started (unless the workflow is disabled: 400); any other is
    returned unchanged.
    """
    if key is None:
        return None
    existing = await starter.store.get_run(new_run_id(workflow.id, key))
    if existing is None:
        return None
    require_same_request(existing, asked)
    if existing.status != "pending" and not start_was_refused(existing):
        # It started: answered as it was first, even if the workflow was disabled since (a
        # 400 would tell a client whose answer was lost that nothing runs).
        return existing
    return await starter.start(workflow, existing, restart_refused=True)


async def start_first_use(
    starter: RunStarter,
    workflow: WorkflowRecord,
    record: RunRecord,
    asked: Asked,
    *,
    cached: dict[str, CachedOutput] | None = None,
    stop_after_node_id: str | None = None,
) -> RunRecord:
    """Start the run a request records (the first use of its key, when it has one).

    A concurrent first use may have stored the key's run first: it is the answer only if
    it asked the same. A key whose run is gone from the store while Temporal keeps its
    workflow is 409: it can name no run now, and a new one under it could never start.
    """
    key = record.idempotency_key
    try:
        stored = await starter.start(
            workflow, record, cached=cached, stop_after_node_id=stop_after_node_id
        )
    except RunIdTaken as exc:
        if key is None:
            raise
        raise Conflict(
            f"Idempotency-Key was used for run {exc.run_id}, which is no longer in the "
            "store (deleted under run retention, TRELLIS_RUN_RETENTION_DAYS): use a new "
            "key for a new run"
        ) from exc
    if key is not None:
        require_same_request(stored, asked)
    return stored
