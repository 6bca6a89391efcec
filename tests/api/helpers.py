"""Small builders and assertions shared by the API tests."""

from __future__ import annotations

from typing import Any

import httpx

API = "/api/v1"
NODE_FIELDS = {
    "id", "name", "nodeType", "position", "executorKey", "a2aPool", "stepConfig", "config",
    "children", "trueSteps", "falseSteps", "choices", "conditionCel", "loopConfig",
    "humanReview",
    # Extensions: map nodes' list and the per-node bound of parallel and map nodes.
    "itemsCel", "maxConcurrency",
}  # fmt: skip
CONTAINERS = ("children", "trueSteps", "falseSteps")


def assert_error(response: httpx.Response, status: int, code: str, *fragments: str) -> None:
    """The one error shape, with each fragment somewhere in the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code
    for fragment in fragments:
        assert fragment in error["message"], f"{fragment!r} not in {error['message']!r}"


def assert_sent_fields_kept(sent: Any, got: Any, path: str = "") -> None:
    """Every field the client sent comes back with the same value, recursively."""
    if isinstance(sent, dict):
        assert isinstance(got, dict), path
        for key, value in sent.items():
            assert key in got, f"{path}.{key} missing"
            assert_sent_fields_kept(value, got[key], f"{path}.{key}")
    elif isinstance(sent, list):
        assert isinstance(got, list) and len(got) == len(sent), path
        for i, (s, g) in enumerate(zip(sent, got, strict=True)):
            assert_sent_fields_kept(s, g, f"{path}[{i}]")
    else:
        assert sent == got, f"{path}: sent {sent!r}, got {got!r}"


def assert_every_node_complete(nodes: list[dict[str, Any]]) -> None:
    """Every node carries every field, containers as lists, recursively."""
    for node in nodes:
        assert set(node) == NODE_FIELDS, sorted(set(node) ^ NODE_FIELDS)
        assert isinstance(node["id"], str) and node["id"]
        for container in (*CONTAINERS, "choices", "a2aPool"):
            assert isinstance(node[container], list)
        for container in CONTAINERS:
            assert_every_node_complete(node[container])
        for choice in node["choices"]:
            assert set(choice) == {"name", "steps"}
            assert_every_node_complete(choice["steps"])


def all_nodes(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for node in nodes:
        out.append(node)
        for container in CONTAINERS:
            out += all_nodes(node[container])
        for choice in node["choices"]:
            out += all_nodes(choice["steps"])
    return out
