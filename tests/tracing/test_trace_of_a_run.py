"""One trace from `POST …/runs` to the last step: the API's request, Temporal's start, the
workflow and its activities, and a client span for each MCP, A2A and HTTP call — whose
context reaches the peer."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from tests.builders import http_step, step
from tests.peers.catalog import Peers
from tests.support.polling import eventually
from tests.tracing.conftest import Traced

TRIGGER = "POST /api/v1/workflows/{workflow_id}/runs"


def chain(span: ReadableSpan, spans: list[ReadableSpan]) -> list[str]:
    """The names from `span` up to its trace's root."""
    by_id = {s.context.span_id: s for s in spans}
    names = []
    current: ReadableSpan | None = span
    while current is not None:
        names.append(current.name)
        parent = current.parent
        current = by_id.get(parent.span_id) if parent is not None else None
    return names


def traceparent_ids(value: str) -> tuple[int, int]:
    """(trace id, parent span id) of a W3C traceparent header."""
    _version, trace_id, span_id, _flags = value.split("-")
    return int(trace_id, 16), int(span_id, 16)


async def test_one_trace_follows_a_run_from_its_trigger_to_each_call_of_its_steps(
    traced: Traced, peers: Peers
) -> None:
    p = traced.platform
    nodes = [
        step("Meta", "peer-http/request_meta", {}, id="meta"),
        step("Agent", "account-manager-v1", {"message": "hello"}, id="agent"),
        http_step("Call", f"{p.peer_url}/echo/traced"),
    ]
    workflow_id = await p.create({"nodes": nodes})
    agent_calls_before = len(peers.agent_requests.seen())
    run_id = await p.trigger(workflow_id)
    run = await p.wait(workflow_id, run_id)
    assert run["status"] == "completed", run

    spans = traced.spans()
    [trigger] = [s for s in spans if s.name == TRIGGER]
    assert trigger.kind == SpanKind.SERVER
    trace_id = trigger.context.trace_id
    [mcp] = [s for s in spans if s.name == "tools/call request_meta"]
    [agent] = [s for s in spans if s.name == "A2A account-manager-v1"]
    [http] = [s for s in spans if s.name == "POST" and s.kind == SpanKind.CLIENT]
    for call in (mcp, agent, http):
        assert call.context.trace_id == trace_id, call.name
        assert call.kind == SpanKind.CLIENT
        assert chain(call, spans)[1:] == [
            "RunActivity:execute_step",
            "StartActivity:execute_step",
            "StartWorkflow:TrellisRun",
            TRIGGER,
        ]
    # The workflow's own span: Temporal's, beside its activities, with no duration.
    [workflow] = [s for s in spans if s.name == "RunWorkflow:TrellisRun"]
    assert chain(workflow, spans)[1:] == ["StartWorkflow:TrellisRun", TRIGGER]
    activity = next(s for s in spans if s.context.span_id == mcp.parent.span_id)  # type: ignore[union-attr]
    assert activity.attributes is not None
    assert activity.attributes["trellis.run_id"] == run_id
    assert activity.attributes["trellis.node_id"] == "meta"
    assert mcp.attributes is not None and mcp.attributes["mcp.method.name"] == "tools/call"
    assert http.attributes is not None and http.attributes["http.response.status_code"] == 200

    # Each peer was handed the context of the span that called it.
    outputs = {n["nodeId"]: n["outputSnapshot"] for n in run["nodeRuns"]}
    assert traceparent_ids(outputs["meta"]["traceparent"]) == (trace_id, mcp.context.span_id)
    assert traceparent_ids(outputs["Call"]["body"]["traceparent"]) == (
        trace_id,
        http.context.span_id,
    )
    sent = [
        r for r in peers.agent_requests.seen()[agent_calls_before:] if "traceparent" in r.headers
    ]
    assert sent and all(
        traceparent_ids(r.headers["traceparent"]) == (trace_id, agent.context.span_id) for r in sent
    )


async def test_an_attempt_cut_off_by_its_timeout_is_a_failed_span_and_so_is_its_call(
    traced: Traced,
) -> None:
    # Both spans ended as if the attempt had succeeded: only a raised error marked them.
    p = traced.platform
    nap = step("Nap", "peer-http/sleepy", {"seconds": 8}, id="nap")
    nap["stepConfig"] = {"timeoutSeconds": 1, "maxRetries": 0}
    run = await p.run({"nodes": [nap]})
    assert run["status"] == "failed", run

    # The run fails when Temporal times the attempt out; the attempt hears it at its next
    # heartbeat, and only then ends its spans.
    def ended() -> list[ReadableSpan] | None:
        spans = traced.spans()
        calls = [s for s in spans if s.name == "tools/call sleepy"]
        parents = [s for s in spans if calls and s.context.span_id == calls[0].parent.span_id]  # type: ignore[union-attr]
        return [calls[0], parents[0]] if calls and parents else None

    call, attempt = await eventually(ended, within=10)
    assert attempt.name == "RunActivity:execute_step"
    assert attempt.status.status_code == StatusCode.ERROR
    assert attempt.attributes is not None and attempt.attributes["error.type"] == "timeout"
    assert call.status.status_code == StatusCode.ERROR
    assert call.attributes is not None and call.attributes["error.type"] == "cancelled"
