"""Tracing off (no OTEL_* variable, the default): no tracer provider, no spans, and no trace
context handed to any peer — the MCP tool's `_meta`, the agent's and the HTTP peer's
headers carry none."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from app.tracing import API_SERVICE, WORKER_SERVICE, start_tracing
from tests.builders import http_step, step
from tests.peers.catalog import Peers
from tests.support.platform import Platform


def test_without_an_endpoint_no_tracer_provider_is_set() -> None:
    assert start_tracing(API_SERVICE, {}) is None
    assert start_tracing(WORKER_SERVICE, {}) is None
    # The global provider is still OpenTelemetry's stand-in: every span is a no-op one.
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)
    assert not trace.get_tracer("test").start_span("x").is_recording()


async def test_a_run_with_tracing_off_sends_no_trace_context_to_any_peer(
    untraced: Platform, peers: Peers
) -> None:
    p = untraced
    nodes = [
        step("Meta", "peer-http/request_meta", {}, id="meta"),
        step("Agent", "account-manager-v1", {"message": "hello"}, id="agent"),
        http_step("Call", f"{p.peer_url}/echo/untraced"),
    ]
    workflow_id = await p.create({"nodes": nodes})
    agent_calls_before = len(peers.agent_requests.seen())
    run = await p.wait(workflow_id, await p.trigger(workflow_id))
    assert run["status"] == "completed", run

    outputs = {n["nodeId"]: n["outputSnapshot"] for n in run["nodeRuns"]}
    # The MCP request's `_meta` was received (it carries the step's idempotency key)...
    assert outputs["meta"] and "traceparent" not in outputs["meta"]
    assert outputs["Call"]["body"]["traceparent"] is None
    sent = peers.agent_requests.seen()[agent_calls_before:]
    assert sent and not [r for r in sent if "traceparent" in r.headers]
