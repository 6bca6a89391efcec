"""How executor keys resolve, and the save-time problems the API turns into 400s."""

from __future__ import annotations

from activities.executors.catalog import Catalog
from activities.executors.catalog_file import A2AAgentSpec, CatalogFile, McpServerSpec
from temporal_workflows.definition import WorkflowSpec

FILE = CatalogFile(
    servers=(
        McpServerSpec(id="one", url="http://127.0.0.1:1/mcp", tools=("send", "only-one")),
        McpServerSpec(id="two", url="http://127.0.0.1:2/mcp", tools=("send",)),
    ),
    agents=(A2AAgentSpec(name="agent-a", url="http://127.0.0.1:3/"),),
)


def spec(*steps: dict[str, object]) -> WorkflowSpec:
    return WorkflowSpec.model_validate({"name": "w", "nodes": list(steps)})


def test_builtin_key_resolves_to_builtin() -> None:
    assert Catalog(FILE).resolve("builtin:transform").kind == "builtin"  # type: ignore[union-attr]


def test_unknown_builtin_does_not_resolve() -> None:
    assert Catalog(FILE).resolve("builtin:nope") is None


def test_tool_offered_once_resolves_bare() -> None:
    ref = Catalog(FILE).resolve("only-one")
    assert ref is not None and (ref.kind, ref.server_id, ref.tool_name) == (
        "mcp",
        "one",
        "only-one",
    )


def test_tool_offered_twice_needs_server_prefix() -> None:
    catalog = Catalog(FILE)
    assert catalog.resolve("send") is None
    assert "ambiguous" in str(catalog.resolution("send"))
    assert catalog.resolve("two/send").server_id == "two"  # type: ignore[union-attr]


def test_agent_name_resolves_to_a2a() -> None:
    assert Catalog(FILE).resolve("agent-a").kind == "a2a"  # type: ignore[union-attr]


def test_unknown_key_is_a_problem_naming_the_node() -> None:
    problems = Catalog(FILE).unknown_executor_problems(
        spec({"id": "n1", "name": "Mail", "nodeType": "step", "executorKey": "nope"})
    )
    assert len(problems) == 1
    assert problems[0].path == "nodes[0] ('Mail')"
    assert problems[0].message.startswith("unknown executorKey: 'nope'")


def test_ambiguous_key_is_a_problem_that_says_so() -> None:
    problems = Catalog(FILE).unknown_executor_problems(
        spec({"id": "n1", "name": "Mail", "nodeType": "step", "executorKey": "send"})
    )
    assert "ambiguous" in problems[0].message and "one/send" in problems[0].message


def test_an_agent_is_named_explicitly_by_a2a_colon_its_name() -> None:
    ref = Catalog(FILE).resolve("a2a:agent-a")
    assert ref is not None and (ref.kind, ref.agent_name, ref.key) == ("a2a", "agent-a", "agent-a")
    assert Catalog(FILE).resolution("a2a:ghost") == (
        "no A2A agent 'ghost' in the executor catalog (its agents are 'agent-a')"
    )


def test_a_tool_named_as_an_agent_is_ambiguous_with_writable_forms_only() -> None:
    # It said "write one of: three/agent-a, the A2A agent": no key says the latter.
    tool = McpServerSpec(id="three", url="http://127.0.0.1:4/mcp", tools=("agent-a",))
    catalog = Catalog(FILE.model_copy(update={"servers": (*FILE.servers, tool)}))
    assert catalog.resolution("agent-a") == (
        "'agent-a' is ambiguous; write one of: three/agent-a, a2a:agent-a"
    )
    assert catalog.resolve("a2a:agent-a").kind == "a2a"  # type: ignore[union-attr]
    assert catalog.resolve("three/agent-a").kind == "mcp"  # type: ignore[union-attr]


def test_unknown_pool_agent_is_a_problem() -> None:
    problems = Catalog(FILE).unknown_executor_problems(
        spec({"id": "p", "name": "Pool", "nodeType": "step", "a2aPool": ["agent-a", "ghost"]})
    )
    assert len(problems) == 1 and "'ghost'" in problems[0].message
    assert "a2aPool" in problems[0].message


def test_known_keys_give_no_problems() -> None:
    problems = Catalog(FILE).unknown_executor_problems(
        spec(
            {"id": "a", "name": "A", "nodeType": "step", "executorKey": "only-one"},
            {"id": "b", "name": "B", "nodeType": "step", "a2aPool": ["agent-a"]},
            {"id": "c", "name": "C", "nodeType": "step", "executorKey": "builtin:echo"},
        )
    )
    assert problems == []
