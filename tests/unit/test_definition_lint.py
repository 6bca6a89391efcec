"""Keys of a definition file that no definition field names, found at any depth."""

from __future__ import annotations

from app.cli.definition_lint import unknown_fields


def test_every_known_key_passes_in_camel_or_snake_case() -> None:
    definition = {
        "id": "wf", "enabled": True, "name": "n", "description": "d", "maxConcurrency": 2,
        "canvas": {"viewport": {"x": 0, "y": 0, "zoom": 1}},
        "nodes": [
            {"id": "a", "name": "A", "node_type": "step", "executorKey": "builtin:echo",
             "config": {"anything": {"goes": 1}}, "stepConfig": {"maxRetries": 1},
             "humanReview": {"requiresConfirmation": True, "approvers": ["role:ops"]}},
            {"name": "L", "nodeType": "loop", "loopConfig": {"maxIterations": 2},
             "children": [{"name": "C", "nodeType": "step", "executorKey": "builtin:echo"}]},
        ],
    }  # fmt: skip
    assert unknown_fields(definition) == []


def test_unknown_keys_are_named_by_their_path() -> None:
    definition = {
        "name": "n", "colour": "red",
        "nodes": [
            {"name": "A", "nodeType": "step", "requireApproval": True},
            {"name": "R", "nodeType": "router", "choices": [
                {"name": "x", "steps": [{"name": "S", "nodeType": "step",
                                         "humanReview": {"requiresConfirmaton": True}}]},
            ]},
            {"name": "L", "nodeType": "loop", "loopConfig": {"maxIterations": 2, "until": "x"}},
        ],
    }  # fmt: skip
    assert unknown_fields(definition) == [
        "colour",
        "nodes[0].requireApproval",
        "nodes[1].choices[0].steps[0].humanReview.requiresConfirmaton",
        "nodes[2].loopConfig.until",
    ]


def test_values_of_the_wrong_shape_are_left_to_the_api() -> None:
    # The API answers those with a 400 naming the field; nothing to add here.
    assert unknown_fields({"name": "n", "nodes": "not a list", "canvas": 3}) == []


def test_a_workflow_as_the_api_serves_it_has_no_unknown_keys() -> None:
    # `trellis workflows show ID --json > f; trellis workflows apply -f f` warned that
    # version, createdAt and updatedAt are "not a field of a definition".
    from datetime import UTC, datetime

    from app.schemas.workflow import WorkflowPublic

    served = WorkflowPublic(
        id="wf",
        name="n",
        enabled=False,
        version=3,
        created_at=datetime.now(UTC),
        updated_at=datetime.now(UTC),
        nodes=[{"name": "A", "nodeType": "step", "executorKey": "builtin:echo"}],
    ).model_dump(mode="json", by_alias=True)
    assert unknown_fields(served) == []
