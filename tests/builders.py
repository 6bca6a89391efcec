"""Definition builders shared by the tests: nodes and workflows as the API takes them.

`node`, `step`, `pool_step` and the containers leave the id to the API, which assigns one.
`echo`, `delay`, `transform` and `http_step` give their node its name as id, so a test can
address it (a gate's `stepId`, a graph node) by the name it wrote. Keyword `fields` are
further node fields, camelCase as on the wire; they override what the builder sets.
"""

from __future__ import annotations

from typing import Any

# Short backoff so retried steps finish in a fraction of a second.
FAST_RETRIES = {"backoffBaseSeconds": 0.05, "backoffMaxSeconds": 0.1}


def node(name: str, node_type: str, **fields: Any) -> dict[str, Any]:
    """Any node."""
    return {"name": name, "nodeType": node_type, **fields}


def step(
    name: str, key: str = "builtin:echo", config: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A step node calling `key` (a built-in, an MCP tool or an A2A agent)."""
    if config is not None:
        fields["config"] = config
    return node(name, "step", executorKey=key, **fields)


def pool_step(
    name: str, agents: list[str], config: dict[str, Any] | None = None, **fields: Any
) -> dict[str, Any]:
    """A step node running on one agent of `agents`."""
    return node(name, "step", a2aPool=agents, config=config or {}, **fields)


def echo(name: str, review: dict[str, Any] | None = None, **config: Any) -> dict[str, Any]:
    """A `builtin:echo` step with id `name`, its config from keywords, optionally gated."""
    if review is not None:
        return step(name, "builtin:echo", config, id=name, humanReview=review)
    return step(name, "builtin:echo", config, id=name)


def delay(name: str, seconds: float, review: dict[str, Any] | None = None) -> dict[str, Any]:
    """A `builtin:delay` step with id `name`: something that takes `seconds` (an activity),
    optionally gated."""
    if review is not None:
        return step(name, "builtin:delay", {"seconds": seconds}, id=name, humanReview=review)
    return step(name, "builtin:delay", {"seconds": seconds}, id=name)


def transform(name: str, **mapping: str) -> dict[str, Any]:
    """A `builtin:transform` step with id `name`: each keyword is an output key and its CEL."""
    return step(name, "builtin:transform", {"map": mapping}, id=name)


def http_step(name: str, url: str, **fields: Any) -> dict[str, Any]:
    """A `builtin:http` step with id `name` that POSTs to `url`."""
    return step(name, "builtin:http", {"url": url, "method": "POST"}, id=name, **fields)


def parallel(name: str, *children: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A parallel node running `children` concurrently."""
    return node(name, "parallel", **({"children": list(children)} | fields))


def condition(name: str, cel: str, *true_steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A condition node running `true_steps` when `cel` holds (`falseSteps=[…]` otherwise)."""
    return node(
        name, "condition", **({"conditionCel": cel, "trueSteps": list(true_steps)} | fields)
    )


def loop(
    name: str, *children: dict[str, Any], max_iterations: int = 2, **fields: Any
) -> dict[str, Any]:
    """A loop node running `children` up to `max_iterations` times."""
    config = {"maxIterations": max_iterations}
    return node(name, "loop", **({"loopConfig": config, "children": list(children)} | fields))


def router(
    name: str, cel: str, choices: dict[str, list[dict[str, Any]]], **fields: Any
) -> dict[str, Any]:
    """A router node: `cel` names the choice (of `choices`, steps by name) to run."""
    listed = [{"name": choice, "steps": steps} for choice, steps in choices.items()]
    return node(name, "router", **({"conditionCel": cel, "choices": listed} | fields))


def retries(max_retries: int, on_error: str = "fail") -> dict[str, Any]:
    """A stepConfig with `max_retries` fast retries."""
    return {"maxRetries": max_retries, "onError": on_error, **FAST_RETRIES}


def workflow(name: str = "wf", *nodes: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A workflow definition body (one echo step unless `nodes` are given)."""
    return {"name": name, "nodes": list(nodes) or [step("only")], **fields}
