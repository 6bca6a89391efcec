"""The rules the API checks in code, stated in /openapi.json: what the document admits for
these fields the API does not refuse (400), and what it refuses the API refuses too.

Values are drawn with Hypothesis across the characters that matter (controls, every kind of
space, U+FEFF, letters), and the document's own schemas (read as OpenAPI means them: ECMA
regexes, by jsonschema-rs) say which are admitted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar
from uuid import uuid4

import httpx
import jsonschema_rs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.helpers import API, assert_error
from tests.builders import node, pool_step, router, step, workflow

T = TypeVar("T")

# Controls (C0, DEL, C1), the spaces str.strip() takes, U+FEFF (ECMA's `\s` takes it,
# Python's does not), a combining accent, letters.
CHARACTERS = (
    "\x00\t\n\x1b\x1c\x1f\x7f\x85\x9f \xa0\u1680\u2000\u2028\u202f\u3000\ufeff\u0301aZ9:-_é"
)


def drawn(strategy: st.SearchStrategy[T], count: int = 60) -> list[T]:
    """`count` values of `strategy`, the same on every run."""
    found: list[T] = []

    @settings(
        max_examples=count, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def collect(value: T) -> None:
        found.append(value)

    collect()
    return found


def schema_of(doc: dict[str, Any], component: str, *path: str) -> dict[str, Any]:
    schema: Any = doc["components"]["schemas"][component]
    for key in path:
        schema = schema[key]
    return {**schema, "components": doc["components"]}


def judge(doc: dict[str, Any], component: str, *path: str) -> Callable[[Any], bool]:
    """Whether the document admits a value at `path` of the component (an ECMA reading)."""
    return jsonschema_rs.validator_for(schema_of(doc, component, *path)).is_valid  # type: ignore[no-any-return]


def texts(pattern: str | None = None) -> st.SearchStrategy[str]:
    made = st.text(alphabet=CHARACTERS, max_size=6)
    if pattern is None:
        return made
    return st.one_of(made, st.from_regex(re.compile(pattern), fullmatch=True, alphabet=CHARACTERS))


async def openapi(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


# Each rule and where the document states it: (component, path to the schema, keyword).
STATED = [
    ("WorkflowCreate", ("properties", "name"), "pattern"),
    ("WorkflowUpdate", ("properties", "name"), "pattern"),
    ("WorkflowNode-Input", ("properties", "name"), "pattern"),
    ("RouterChoice-Input", ("properties", "name"), "pattern"),
    ("WorkflowUpdate", ("properties", "nodes"), "minItems"),
    ("WorkflowNode-Input", ("properties", "a2aPool"), "maxItems"),
    ("WorkflowNode-Input", ("properties", "a2aPool"), "uniqueItems"),
    ("HumanReview", ("properties", "approvers", "items"), "pattern"),
    ("HumanReview", ("properties", "approvers"), "uniqueItems"),
    ("HumanReview", (), "allOf"),
    ("HumanReview", ("properties", "userInputSchema"), "description"),
    ("StepConfig", ("properties", "backoffMaxSeconds"), "description"),
    ("StepConfig", ("properties", "backoffBaseSeconds"), "minimum"),
    ("StepConfig", ("properties", "backoffMaxSeconds"), "minimum"),
    ("StepConfig", ("properties", "timeoutSeconds"), "minimum"),
    ("DependencyRequest", (), "oneOf"),
    ("RunCreate", ("properties", "resolvedDependencies"), "description"),
    ("RunCreate", ("properties", "resolvedDependencies", "anyOf", "0"), "uniqueItems"),
    ("PermissionsUpdate", ("properties", "grants"), "description"),
    ("PermissionsUpdate", ("properties", "grants"), "uniqueItems"),
    ("Grant", ("properties", "principal"), "pattern"),
]


def reachable(doc: dict[str, Any]) -> set[str]:
    """Every component some request body refers to, directly or through another."""
    seen: set[str] = set()
    bodies = [
        op["requestBody"]["content"]["application/json"]["schema"]
        for ops in doc["paths"].values()
        for op in ops.values()
        if "requestBody" in op
    ]

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            ref = value.get("$ref", "")
            name = ref.rsplit("/", 1)[-1]
            if ref and name not in seen:
                seen.add(name)
                walk(doc["components"]["schemas"][name])
            for each in value.values():
                walk(each)
        elif isinstance(value, list):
            for each in value:
                walk(each)

    walk(bodies)
    return seen


async def test_the_document_states_each_rule_of_a_request_the_api_checks_in_code(
    shared_client: httpx.AsyncClient,
) -> None:
    doc = await openapi(shared_client)
    bodies = reachable(doc)
    for component, path, keyword in STATED:
        assert component in bodies, component
        schema: Any = doc["components"]["schemas"][component]
        for key in path:
            schema = schema[int(key)] if isinstance(schema, list) else schema[key]
        assert keyword in schema, (component, path, keyword)
    # What JSON Schema cannot say is said in words where the field is.
    grants = doc["components"]["schemas"]["PermissionsUpdate"]["properties"]["grants"]
    assert "principal at most once" in grants["description"]
    reuse, rerun = doc["components"]["schemas"]["DependencyRequest"]["oneOf"]
    assert reuse["properties"]["resolution"]["const"] == "reuse_previous_output"
    assert "sourceNodeRunId" in reuse["required"]
    assert reuse["properties"]["sourceNodeRunId"]["type"] == "string"
    assert rerun["properties"]["sourceNodeRunId"] == {"type": "null"}


async def test_a_name_the_document_admits_is_saved_and_one_it_refuses_is_a_400(
    shared_client: httpx.AsyncClient,
) -> None:
    doc = await openapi(shared_client)
    schemas = doc["components"]["schemas"]
    # A workflow's name is stripped before it is checked; a node's and a choice's are not.
    placements: list[tuple[str, Callable[[str], dict[str, Any]]]] = [
        ("WorkflowCreate", lambda name: workflow(name)),
        ("WorkflowNode-Input", lambda name: workflow(f"node {uuid4()}", step(name, id="s"))),
        (
            "RouterChoice-Input",
            lambda name: workflow(
                f"choice {uuid4()}",
                router("r", "'other'", {name: [step("a")], "other": [step("b")]}),
            ),
        ),
    ]
    for component, body in placements:
        admits = judge(doc, component, "properties", "name")
        names = drawn(texts(schemas[component]["properties"]["name"]["pattern"]))
        assert any(map(admits, names)) and not all(map(admits, names))
        for name in (n for n in names if n != "other"):
            response = await shared_client.post(f"{API}/workflows", json=body(name))
            if admits(name):
                # 409: a workflow name another has (two drawn names may match once composed).
                assert response.status_code in (201, 409), (component, name, response.text)
            else:
                assert response.status_code == 400, (component, name, response.text)
                said = response.json()["error"]["message"]
                assert re.search("control characters|blank|empty|at least 1 char", said), said


async def test_a_dependency_the_document_admits_is_not_refused_and_one_it_refuses_is(
    shared_client: httpx.AsyncClient,
) -> None:
    doc = await openapi(shared_client)
    admits = judge(doc, "DependencyRequest")
    created = await shared_client.post(f"{API}/workflows", json=workflow(f"deps {uuid4()}"))
    runs = f"{API}/workflows/{created.json()['id']}/runs"
    toggled = await shared_client.post(f"{runs[: -len('/runs')]}/toggle", json={"enabled": True})
    assert toggled.status_code == 200
    entries = drawn(
        st.fixed_dictionaries(
            {"nodeId": st.sampled_from(["only", "a.b"])},
            optional={
                "resolution": st.sampled_from(["reuse_previous_output", "rerun", "retry"]),
                "sourceNodeRunId": st.one_of(st.none(), st.sampled_from(["nr-1", "", "a b"])),
            },
        ),
        count=40,
    )
    assert any(map(admits, entries)) and not all(map(admits, entries))
    for entry in entries:
        body = {"parentRunId": "no-such-run", "resolvedDependencies": [entry]}
        response = await shared_client.post(runs, json=body)
        # Admitted, the request reaches the lookup of its (made-up) parent run.
        expected = 404 if admits(entry) else 400
        assert response.status_code == expected, (entry, response.text)


async def test_grants_the_document_admits_are_refused_only_for_a_repeated_principal(
    shared_client: httpx.AsyncClient,
) -> None:
    doc = await openapi(shared_client)
    admits = judge(doc, "PermissionsUpdate")
    created = await shared_client.post(f"{API}/workflows", json=workflow(f"grants {uuid4()}"))
    url = f"{API}/workflows/{created.json()['id']}/permissions"
    principals = st.builds(
        lambda kind, rest: f"{kind}:{rest}", st.sampled_from(["user", "role", "team"]), texts()
    )
    grant = st.fixed_dictionaries(
        {
            "principal": principals,
            "permissions": st.lists(
                st.sampled_from(["VIEW", "EDIT"]), min_size=1, max_size=2, unique=True
            ),
        }
    )
    bodies = drawn(st.fixed_dictionaries({"grants": st.lists(grant, max_size=3)}))
    assert any(map(admits, bodies)) and not all(map(admits, bodies))
    for body in bodies:
        response = await shared_client.put(url, json=body)
        principals_given = [g["principal"] for g in body["grants"]]
        if not admits(body):
            assert_error(response, 400, "invalid_request")
        elif len(set(principals_given)) < len(principals_given):
            # The one rule the description states in words.
            assert_error(response, 400, "invalid_request", "each principal may appear once")
        else:
            assert response.status_code == 200, (body, response.text)


GATE = {"requiresConfirmation": True}
FORM = [{"name": "age", "fieldType": "number"}]
# Save-time rules the document states too: (operation, body, what the 400 says).
REFUSED = [
    ("updateWorkflow", {"nodes": []}, "at least one root node"),
    ("createWorkflow", workflow("p", pool_step("p", [f"a{i}" for i in range(6)])), "at most 5"),
    ("createWorkflow", workflow("p", pool_step("p", ["web-agent", "web-agent"])), "twice"),
    (
        "createWorkflow",
        workflow("g", step("s", humanReview={**GATE, "approvers": ["bob"]})),
        "approvers[0]",
    ),
    (
        "createWorkflow",
        workflow("g", step("s", humanReview={**GATE, "approvers": ["user:a\x1c"]})),
        "approvers[0]",
    ),
    (
        "createWorkflow",
        workflow("g", step("s", humanReview={**GATE, "approvers": ["user:a"] * 2})),
        "twice",
    ),
    (
        "createWorkflow",
        workflow("g", step("s", humanReview={"approvers": ["user:a"]})),
        "needs a gate",
    ),
    (
        "createWorkflow",
        workflow("f", step("s", humanReview={**GATE, "userInputSchema": FORM})),
        "needs requiresUserInput",
    ),
    ("createWorkflow", workflow("n", node(" \u3000", "step", executorKey="builtin:echo")), "blank"),
]


async def test_what_the_document_refuses_of_a_definition_the_api_refuses(
    shared_client: httpx.AsyncClient,
) -> None:
    doc = await openapi(shared_client)
    created = await shared_client.post(f"{API}/workflows", json=workflow(f"target {uuid4()}"))
    target = created.json()["id"]
    for operation, body, says in REFUSED:
        component = "WorkflowUpdate" if operation == "updateWorkflow" else "WorkflowCreate"
        assert not judge(doc, component)(body), body
        if operation == "updateWorkflow":
            response = await shared_client.put(f"{API}/workflows/{target}", json=body)
        else:
            response = await shared_client.post(f"{API}/workflows", json=body)
        assert_error(response, 400, "invalid_request", says)
    for body in (
        workflow(
            f"ok {uuid4()}", step("s", humanReview={**GATE, "approvers": ["user:a", "role:b"]})
        ),
        workflow(
            f"ok {uuid4()}",
            step("s", humanReview={"requiresUserInput": True, "userInputSchema": FORM}),
        ),
    ):
        assert judge(doc, "WorkflowCreate")(body)
        response = await shared_client.post(f"{API}/workflows", json=body)
        assert response.status_code == 201, response.text


# Principals (docs/security.md, "Principals"): `\s` was another set in the document, in
# pydantic's Rust regex (grants) and in Python's re (approvers): `user:a\x1cb` was a grant
# but no approver; `\x00`, ESC, DEL, C1 and bidi controls were both.
PRINCIPALS = [
    *(f"user:a{c}b" for c in "\x00\t\x1b\x1c\x1f\x7f\x85\x9f \xa0\u1680\u2000\u2028\u3000"),
    *(f"role:a{c}b" for c in "\xad\u200b\u200e\u202a\u202e\u2060\u2066\u2069\ufeff"),
    "user:" + "x" * 201,
    "bob",
    "user:",
    "user:zoë",
    "role:財務",
    "user:" + "x" * 200,
    "user:a\u0301",
]


async def test_a_principal_the_document_admits_is_a_grant_and_an_approver_and_no_other(
    shared_client: httpx.AsyncClient,
) -> None:
    doc = await openapi(shared_client)
    as_grant = judge(doc, "Grant", "properties", "principal")
    as_approver = judge(doc, "HumanReview", "properties", "approvers", "items")
    created = await shared_client.post(f"{API}/workflows", json=workflow(f"who {uuid4()}"))
    url = f"{API}/workflows/{created.json()['id']}/permissions"
    admitted = [p for p in PRINCIPALS if as_grant(p)]
    assert admitted == PRINCIPALS[-4:]
    for principal in PRINCIPALS:
        assert as_approver(principal) == as_grant(principal), principal
        grant = {"principal": principal, "permissions": ["VIEW"]}
        shared = await shared_client.put(url, json={"grants": [grant]})
        gate = {**GATE, "approvers": [principal]}
        saved = await shared_client.post(
            f"{API}/workflows", json=workflow(f"who {uuid4()}", step("s", humanReview=gate))
        )
        if principal in admitted:
            assert (shared.status_code, saved.status_code) == (200, 201), principal
        else:
            assert_error(shared, 400, "invalid_request", "grants[0].principal")
            assert_error(saved, 400, "invalid_request", "approvers[0]")
