"""A run's open gates read in SQL, without parsing its definition snapshot.

The approvals inbox and the gates gauge read every run waiting at a gate. Parsed whole,
3,500 such runs cost the API a quarter of a second per request (their snapshots are most
of their size); SQLite's JSON functions take out what a gate needs in C: the run's open
gates, its workflow's name, and each `approvers` list of the snapshot's steps with the
step's id.
"""

from __future__ import annotations

import json
import re
from typing import Any

from activities.store.records import GatedRun

# SQLite writes a path's label in quotes when it holds more than letters and digits
# (`$."definition_snapshot".nodes[0]."human_review"`); both spellings are taken.
_IN_REVIEW = (
    "(t.path LIKE '%.\"human\\_review\"' ESCAPE '\\' OR t.path LIKE '%.human\\_review' ESCAPE '\\')"
)
_NODE_OF_REVIEW = (
    "CASE WHEN t.path LIKE '%\"' THEN substr(t.path, 1, length(t.path) - 15)"
    " ELSE substr(t.path, 1, length(t.path) - 13) END"
)
# Each `approvers` list under a `human_review`, as [path of its node, node id, approvers].
_REVIEWS = (
    "(SELECT json_group_array(json_array(node, json_extract(runs.doc, node || '.id'),"
    " json(approvers))) FROM ("
    f"SELECT {_NODE_OF_REVIEW} AS node, t.value AS approvers"
    " FROM json_tree(runs.doc, '$.definition_snapshot.nodes') AS t"
    f" WHERE t.key = 'approvers' AND t.type = 'array' AND {_IN_REVIEW}))"
)
GATED_RUN_COLUMNS = (
    "id, workflow_definition_id, status, json_extract(doc, '$.definition_snapshot.name'),"
    f" json_extract(doc, '$.pending_requirements'), {_REVIEWS}"
)
# Where the snapshot's nodes are: its top-level list and the sequences nested in nodes
# (temporal_workflows/definition.py, `child_sequences`). A `human_review` elsewhere (in a
# step's free-form `config`) is no gate's.
_NODE_PATH = re.compile(
    r'\$\."?definition_snapshot"?\.nodes\[\d+\]'
    r'(?:\.(?:"?(?:children|true_steps|false_steps)"?\[\d+\]|choices\[\d+\]\.steps\[\d+\]))*'
)


def gated_run(row: Any) -> GatedRun:
    """A GatedRun from a row of GATED_RUN_COLUMNS."""
    run_id, workflow_id, status, name, pending, reviews = row
    approvers: dict[str, list[str]] = {}
    for path, node_id, names in json.loads(reviews or "[]"):
        if isinstance(node_id, str) and names and _NODE_PATH.fullmatch(path):
            approvers.setdefault(node_id, names)
    return GatedRun(
        id=run_id,
        workflow_definition_id=workflow_id,
        workflow_name=name,
        status=status,
        pending_requirements=json.loads(pending),
        approvers=approvers,
    )
