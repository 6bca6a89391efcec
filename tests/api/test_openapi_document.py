"""What /openapi.json promises, checked without Schemathesis (tests/contract runs it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import jsonschema
import pytest
from pydantic import SecretStr

from app.main import create_app
from app.settings import Settings
from tests.api.helpers import API, assert_error
from tests.builders import condition, loop, node, router, step, workflow


def document(tmp_path: Path, **settings: Any) -> dict[str, Any]:
    return create_app(Settings(data_dir=tmp_path, **settings)).openapi()


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def admits(doc: dict[str, Any], operation_id: str, body: Any) -> bool:
    """Whether the document's request body schema of the operation takes `body`."""
    op = next(op for _, _, op in operations(doc) if op["operationId"] == operation_id)
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**schema, "components": doc["components"]}).is_valid(
        body
    )


def test_no_operation_documents_422_and_every_error_has_the_error_body(tmp_path: Path) -> None:
    doc = document(tmp_path)
    assert '"422"' not in json.dumps(doc)
    for path, method, op in operations(doc):
        for status, response in op["responses"].items():
            if int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, method)


def test_every_api_operation_documents_its_auth_errors_and_a_stable_id(tmp_path: Path) -> None:
    ids = []
    for path, _, op in operations(document(tmp_path)):
        ids.append(op["operationId"])
        assert "_" not in op["operationId"]
        if path.startswith("/api/v1"):
            assert {"401", "403"} <= set(op["responses"]), path
    assert len(ids) == len(set(ids))


def test_routes_that_need_temporal_document_503_and_lookups_404(tmp_path: Path) -> None:
    paths = document(tmp_path)["paths"]
    assert "503" in paths["/api/v1/workflows/{workflow_id}/runs"]["post"]["responses"]
    read = paths["/api/v1/workflows/{workflow_id}/runs"]["get"]["responses"]
    assert "service_unavailable" not in read["503"]["description"]  # reads need no Temporal
    assert "404" in paths["/api/v1/workflows/{workflow_id}"]["get"]["responses"]
    assert (
        "409" in paths["/api/v1/workflows/{workflow_id}/runs/{run_id}/approve"]["post"]["responses"]
    )


def test_the_conditional_puts_document_if_match_and_412(tmp_path: Path) -> None:
    paths = document(tmp_path)["paths"]
    for path in (
        "/api/v1/workflows/{workflow_id}",
        "/api/v1/workflows/{workflow_id}/schedules/{schedule_id}",
        "/api/v1/workflows/{workflow_id}/permissions",
    ):
        put = paths[path]["put"]
        assert "precondition_failed" in put["responses"]["412"]["description"], path
        assert {"name": "If-Match", "in": "header"}.items() <= put["parameters"][-1].items()
        assert "412" not in paths[path]["get"]["responses"], path
    code = document(tmp_path)["components"]["schemas"]["ErrorInfo"]["properties"]["code"]
    assert "precondition_failed" in code["description"]


def test_every_api_route_that_reads_the_store_documents_503_database_error(
    tmp_path: Path,
) -> None:
    # docs/api.md: a store that cannot be reached for now is 503 `database_error`.
    paths = document(tmp_path)["paths"]
    for path, method in [
        ("/api/v1/workflows", "get"),
        ("/api/v1/workflows/{workflow_id}", "get"),
        ("/api/v1/workflows/{workflow_id}/runs/{run_id}", "get"),
        ("/api/v1/runs/{run_id}", "get"),
        ("/api/v1/approvals", "get"),
        ("/api/v1/workflows", "post"),
        # Temporal's 503 and the store's share the status: both are described.
        ("/api/v1/workflows/{workflow_id}/runs", "post"),
        ("/api/v1/workflows/{workflow_id}", "delete"),
    ]:
        description = paths[path][method]["responses"]["503"]["description"]
        assert "database_error" in description, (path, method)
    assert (
        "service_unavailable"
        in paths["/api/v1/workflows/{workflow_id}/runs"]["post"]["responses"]["503"]["description"]
    )
    # The catalog is read from the executors file, not the store.
    assert "503" not in paths["/api/v1/servers"]["get"]["responses"]


async def test_every_route_that_may_answer_503_database_error_documents_its_500_too(
    client: httpx.AsyncClient,
) -> None:
    # docs/api.md: a store that fails an operation (not unreachable) is 500 `database_error`.
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    store_routes = [
        (path, method, op["responses"])
        for path, method, op in operations(response.json())
        if "database_error" in op["responses"].get("503", {}).get("description", "")
    ]
    assert ("/api/v1/workflows", "get") in [(path, method) for path, method, _ in store_routes]
    for path, method, responses in store_routes:
        assert "500" in responses, (path, method)
        assert responses["500"]["description"].startswith("database_error: "), (path, method)
        schema = responses["500"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    paths = response.json()["paths"]
    assert "500" not in paths["/api/v1/servers"]["get"]["responses"]  # no store behind it


def test_a_token_is_optional_in_dev_mode_and_required_in_jwt_mode(tmp_path: Path) -> None:
    dev = document(tmp_path)["paths"]["/api/v1/workflows"]["get"]["security"]
    jwt = document(tmp_path, auth_mode="jwt", jwt_secret=SecretStr("x" * 40))["paths"][
        "/api/v1/workflows"
    ]["get"]["security"]
    assert {} in dev and {} not in jwt


def test_creating_responses_link_to_what_takes_their_ids(tmp_path: Path) -> None:
    paths = document(tmp_path)["paths"]
    links = paths["/api/v1/workflows/{workflow_id}/runs"]["post"]["responses"]["202"]["links"]
    assert links["approve"]["parameters"] == {
        "run_id": "$response.body#/runId",
        "workflow_id": "$request.path.workflow_id",
    }


async def test_405_allows_every_method_of_the_path(client: httpx.AsyncClient) -> None:
    response = await client.post(f"{API}/workflows/some-id")
    assert_error(response, 405, "method_not_allowed", "POST")
    assert response.headers["allow"] == "DELETE, GET, HEAD, PUT"


async def test_a_page_past_the_limit_is_400_not_500(client: httpx.AsyncClient) -> None:
    for path in ("/workflows", "/approvals"):
        response = await client.get(f"{API}{path}", params={"page": 2**62})
        assert_error(response, 400, "invalid_request", "page")


@pytest.mark.parametrize("written", ["1.0", "1e0", " 1", "+1", "0x1"])
async def test_an_integer_in_a_query_string_is_written_as_one(
    client: httpx.AsyncClient, written: str
) -> None:
    # pydantic's lax mode took "1.0" for 1 (the body's integers are strict already).
    created = await client.post(f"{API}/workflows", json=workflow("paged"))
    wf = created.json()["id"]
    for path, name in (
        ("/workflows", "page"),
        ("/workflows", "perPage"),
        ("/approvals", "page"),
        (f"/workflows/{wf}/runs", "perPage"),
    ):
        response = await client.get(f"{API}{path}", params={name: written})
        assert_error(response, 400, "invalid_request", name)
    listed = await client.get(f"{API}/workflows", params={"page": "1", "perPage": "20"})
    assert listed.status_code == 200


DEPENDENCY = {"nodeId": "a", "resolution": "rerun"}
# Bodies the API refuses by a rule JSON Schema can say (Schemathesis found each one
# "schema-valid" and refused): the document refuses them too, and the API as before.
REFUSED_BY_STATED_RULES = [
    ("createWorkflow", workflow("i", step("s", id="")), "node id '' is malformed"),
    ("createWorkflow", workflow("k", step("s", "")), "executorKey must not be empty"),
    ("createWorkflow", workflow("c", condition("c", "", step("t"))), "need conditionCel"),
    (
        "createWorkflow",
        workflow("m", node("m", "map", itemsCel="", children=[step("x")])),
        "need itemsCel",
    ),
    (
        "createWorkflow",
        workflow("l", loop("l", step("x"), loopConfig={"maxIterations": 2, "endConditionCel": ""})),
        "endConditionCel: CEL expression is empty",
    ),
    (
        "createWorkflow",
        workflow("r", router("r", "'b'", {"": [step("x")], "b": [step("y")]})),
        "router choice names must not be empty",
    ),
    (
        "triggerRun",
        {"triggerSource": "manual", "parentRunId": "0", "resolvedDependencies": [DEPENDENCY]},
        "triggerSource must be 'retry'",
    ),
    ("triggerRun", {"triggerSource": "replay"}, "needs parentRunId"),
    ("triggerRun", {"triggerSource": "retry", "parentRunId": None}, "needs parentRunId"),
    ("triggerRun", {"resolvedDependencies": [DEPENDENCY]}, "requires parentRunId"),
]


@pytest.mark.parametrize(("operation_id", "body", "says"), REFUSED_BY_STATED_RULES)
async def test_what_the_api_refuses_by_a_rule_json_schema_can_say_the_document_refuses(
    shared_client: httpx.AsyncClient, operation_id: str, body: dict[str, Any], says: str
) -> None:
    doc = (await shared_client.get("/openapi.json")).json()
    assert not admits(doc, operation_id, body)
    url = f"{API}/workflows"
    if operation_id == "triggerRun":
        created = await shared_client.post(url, json=workflow(f"target {uuid4()}"))
        url = f"{url}/{created.json()['id']}/runs"
    assert_error(await shared_client.post(url, json=body), 400, "invalid_request", says)


def test_the_document_admits_the_bodies_those_rules_take(tmp_path: Path) -> None:
    doc = document(tmp_path)
    for body in (
        workflow("ids", step("s", id="step-1:a.b_c"), condition("c", "true", step("t"))),
        workflow("m", node("m", "map", itemsCel="[1]", children=[step("x")])),
    ):
        assert admits(doc, "createWorkflow", body), body
    for body in (
        {},
        {"triggerSource": "api", "parentRunId": None},
        {"triggerSource": None, "initialInput": None, "resolvedDependencies": None},
        {"triggerSource": None, "parentRunId": "run-1"},
        {"parentRunId": None, "resolvedDependencies": None},
        {"parentRunId": "run-1"},
        {"triggerSource": "retry", "parentRunId": "run-1", "resolvedDependencies": [DEPENDENCY]},
    ):
        assert admits(doc, "triggerRun", body), body
