"""Traces link to the rest: log lines name their trace, and decisions sent through the API
join the run's workflow in Temporal's spans."""

from __future__ import annotations

import json
import logging

from opentelemetry.sdk.trace import TracerProvider

from app.logs import JsonFormatter, TextFormatter
from tests.builders import echo
from tests.hitl.helpers import approve, start, wait_for_gate
from tests.tracing.conftest import Traced


def _line(formatter: logging.Formatter) -> str:
    record = logging.LogRecord("trellis.test", logging.INFO, __file__, 1, "hello", None, None)
    return formatter.format(record)


def test_a_line_logged_inside_a_span_names_its_trace_and_span() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        entry = json.loads(_line(JsonFormatter()))
        text = _line(TextFormatter())
    context = span.get_span_context()
    assert entry["trace_id"] == format(context.trace_id, "032x")
    assert entry["span_id"] == format(context.span_id, "016x")
    assert f"trace_id={context.trace_id:032x}" in text


def test_a_line_outside_any_span_has_no_trace_fields() -> None:
    entry = json.loads(_line(JsonFormatter()))
    assert "trace_id" not in entry and "span_id" not in entry
    assert "trace_id" not in _line(TextFormatter())


async def test_a_decision_is_traced_from_its_request_into_the_runs_trace(
    traced: Traced,
) -> None:
    p = traced.platform
    wf, run_id = await start(p, [echo("send", {"requiresConfirmation": True})])
    await wait_for_gate(p, wf, run_id, "send")
    assert (await approve(p, wf, run_id, stepId="send", resolution="confirm")).status_code == 200
    assert (await p.wait(wf, run_id))["status"] == "completed"

    spans = traced.spans()
    [trigger] = [s for s in spans if s.name.endswith("/runs") and s.name.startswith("POST ")]
    [request] = [s for s in spans if s.name.startswith("POST ") and s.name.endswith("/approve")]
    [update] = [s for s in spans if s.name == "StartWorkflowUpdate:decide"]
    [handled] = [s for s in spans if s.name == "HandleUpdate:decide"]
    # The request's trace: the approve request and the update it sends.
    assert update.parent is not None and update.parent.span_id == request.context.span_id
    # The run's trace: the workflow handling it, linked to the request's.
    assert handled.context.trace_id == trigger.context.trace_id
    assert [link.context.span_id for link in handled.links] == [update.context.span_id]
