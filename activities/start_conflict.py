"""Whose workflow Temporal keeps under a run id when a start of a record just written
is refused as already started: a deleted run's, or this record's own.

Retention deletes only runs that ended, so a deleted run's workflow is closed. A running
one is this record's: the reconciler (which starts a run pending over 30 s) or another
starter got there while this start waited (a payload write held by a locked store, a
slow Temporal). Closed, it is a deleted run's unless this record's workflow wrote (the
store's `delete_unstarted_run` tells). No clocks are compared: a run retention of
minutes puts a deleted run's start within any slack that skew between hosts would need.
"""

from __future__ import annotations

import logging

from temporalio.client import Client, WorkflowExecutionStatus

log = logging.getLogger("trellis.runs")


async def kept_workflow_is_running(client: Client, run_id: str) -> bool | None:
    """Whether the workflow Temporal keeps under the run id runs; None when Temporal
    could not say (an outage: the caller keeps the record, as for a start in flight)."""
    try:
        described = await client.get_workflow_handle(run_id).describe()
    except Exception as exc:  # any failure to ask is "could not say"
        log.warning("could not describe workflow %s after its start was refused: %s", run_id, exc)
        return None
    return described.status == WorkflowExecutionStatus.RUNNING
