"""The form of a schedule's firing's workflow id, which the store tells from a run's.

The API names a schedule `sched-{workflowId}-{12 hex}` (app/services/schedules.py), the
schedule starts `{schedule}-run` (temporal_workflows/schedule_trigger.py), and Temporal
names each firing by that and its second: `sched-…-run-2026-11-30T22:42:55Z`
(activities/fired_by.py). A run's workflow id is its run id, always `run-{uuid}`
(activities/run_start.py `new_run_id`, and the trigger's), and a schedule's own argument
is under `…-run`: neither has this form.
"""

from __future__ import annotations

import re

# MongoDB's: anchored on its `sched-` prefix, so the run_id index finds the candidates.
FIRING_ID = re.compile(
    r"^sched-.*-run-[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", re.DOTALL
)
# The same for SQLite's GLOB (case-sensitive, `*` any text; a constant prefix: indexed too).
FIRING_ID_GLOB = (
    "sched-*-run-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z"
)
