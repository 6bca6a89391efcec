"""Replay recorded histories of representative runs: breaking running workflows fails CI.

Record the missing ones with `TRELLIS_RECORD_HISTORIES=1 pytest tests/engine/test_replay.py
-k record`; `TRELLIS_RECORD_HISTORIES=all` records every one again but PRE_PATCH's (only
after an intentional, patched change: the old files are what running workflows look like).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.api.workflowservice.v1 import ResetActivityRequest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    Replayer,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from app.tracing import temporal_interceptors
from app.worker import build_worker
from temporal_workflows.contracts import PAUSE, RESUME, ControlRequest
from temporal_workflows.interpreter import TrellisRun
from temporal_workflows.read_model import node_run_id
from tests.builders import delay, echo, http_step, parallel, retries, transform
from tests.hitl.helpers import approve, wait_for_gate, wait_for_requirement
from tests.hitl.test_control_errors import running_without_a_worker
from tests.support.continuing import start_continuing
from tests.support.platform import Platform, executor_registry
from tests.support.polling import eventually

HISTORIES = Path(__file__).parent.parent / "histories"


TREE = [
    echo("a", greeting="hi {{ input.name }}"),
    {
        "id": "fan",
        "name": "fan",
        "nodeType": "parallel",
        "children": [echo("p1"), delay("p2", 0.05)],
    },
    {
        "id": "cond",
        "name": "cond",
        "nodeType": "condition",
        "conditionCel": "input.flag",
        "trueSteps": [
            {
                "id": "route",
                "name": "route",
                "nodeType": "router",
                "conditionCel": "'x'",
                "choices": [
                    {"name": "x", "steps": [echo("rx")]},
                    {"name": "y", "steps": [echo("ry")]},
                ],
            }
        ],
        "falseSteps": [echo("f")],
    },
    {
        "id": "loop",
        "name": "loop",
        "nodeType": "loop",
        "loopConfig": {"maxIterations": 3, "endConditionCel": "iteration == 1"},
        "children": [echo("tick")],
    },
]


# Histories recorded before a patch or an unpatched change of text (each named in
# _record_all's comments): the code that made them is gone, so `TRELLIS_RECORD_HISTORIES=all`
# would replace them with runs of the new code and leave the old branch untested. Recorded
# only when missing.
PRE_PATCH = frozenset(
    {
        "parallel_branch_copied",
        "route_unicode_form_failed",
        "non_finite_passed_null",
        "string_conversion_python",
        "null_equality_refused",
        "nested_null_equality_refused",
        "decided_paused_cancelled",
        "timed_out_paused",
        "rejected_paused_cancelled",
        "timed_out_paused_cancelled",
        "rejected_paused_failed",
        "rejected_failed",
        "router_selected_none",
        "route_timed_out_unsuggested",
        "router_selected_twice",
        "inline_chain",
        "inline_chain_budget_spent",
        "condition_chain_budget_spent",
        "mixed_chain_sliced_by_inline_steps",
        "step_timed_out_unnamed",
        "step_reset_failed",
        "rejected_after_1_retries",
        "ternary_error_overload",
        "inline_events_unnumbered",
        "continued_map_copied",
        "map_all_at_once",
        "parallel_all_at_once",
        "compile_uncharged",
    }
)


async def _record_all(platform: Platform) -> dict[str, str]:
    runs: dict[str, str] = {}
    wf = await platform.create({"nodes": TREE})
    runs["tree"] = await platform.trigger(wf, {"name": "Ada", "flag": True})
    await platform.wait(wf, runs["tree"])

    wf = await platform.create(
        {
            "nodes": [
                {
                    "id": "bad",
                    "name": "bad",
                    "nodeType": "step",
                    "executorKey": "builtin:http",
                    "config": {"url": f"{platform.peer_url}/status/400"},
                }
            ]
        }
    )
    runs["failed"] = await platform.trigger(wf)
    await platform.wait(wf, runs["failed"])

    wf = await platform.create(
        {
            "nodes": [
                echo("gate", {"requiresConfirmation": True}),
                echo("review", {"requiresOutputReview": True, "onReject": "retry"}),
                echo(
                    "timed",
                    {"requiresConfirmation": True, "timeoutSeconds": 0.5, "onTimeout": "approve"},
                ),
            ]
        }
    )
    runs["gates"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, runs["gates"], "gate")
    await approve(platform, wf, runs["gates"], stepId="gate", resolution="confirm")
    await wait_for_gate(platform, wf, runs["gates"], "review")
    await approve(
        platform, wf, runs["gates"], stepId="review", resolution="reject", feedback="again"
    )
    await asyncio.sleep(0.3)
    await wait_for_gate(platform, wf, runs["gates"], "review")
    await approve(
        platform, wf, runs["gates"], stepId="review", resolution="edit", editedOutput={"x": 1}
    )
    await platform.wait(wf, runs["gates"])

    # Form gates decided with their defaults: the audit trail records the values used.
    form = [{"name": "lvl", "fieldType": "string", "defaultValue": "low"}]
    wf = await platform.create(
        {
            "nodes": [
                echo("form", {"requiresUserInput": True, "userInputSchema": form}),
                echo(
                    "timed_form",
                    {
                        "requiresUserInput": True,
                        "userInputSchema": form,
                        "timeoutSeconds": 0.5,
                        "onTimeout": "approve",
                    },
                ),
            ]
        }
    )
    runs["form_defaults_recorded"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, runs["form_defaults_recorded"], "form")
    await approve(platform, wf, runs["form_defaults_recorded"], stepId="form", resolution="confirm")
    await platform.wait(wf, runs["form_defaults_recorded"])

    # A parallel whose later child carries a stale copy of a name an earlier child set.
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel"}
    fan["children"] = [{**echo("x", n="inner"), "id": "inner_x"}, echo("y")]
    wf = await platform.create(
        {
            "nodes": [
                echo("x", n="outer"),
                fan,
                echo("b", n="{{ previous_step_outputs.x.config.n }}"),
            ]
        }
    )
    # Recorded before fanout.BRANCH_WRITES_PATCH ("copied": "b" read "outer"), and after.
    for name in ("parallel_branch_copied", "parallel_branch_writes"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])

    # A router selecting a choice by its name in another Unicode form: recorded before
    # containers.UNICODE_FORM_ROUTE_PATCH (the router failed), and after (it runs it).
    choices = [
        {"name": "cafe\u0301", "steps": [echo("coffee")]},
        {"name": "tea", "steps": [echo("t")]},
    ]
    route = {"id": "r", "name": "r", "nodeType": "router", "conditionCel": "'caf\u00e9'"}
    wf = await platform.create({"nodes": [{**route, "choices": choices}]})
    for name in ("route_unicode_form_failed", "route_unicode_form_selected"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])

    # A division by zero rendered into a step's config: recorded before
    # expressions.NON_FINITE_PATCH (the step got null), and after (the node fails).
    wf = await platform.create({"nodes": [echo("div", x="{{ 1.0/0.0 }}")]})
    for name in ("non_finite_passed_null", "non_finite_failed"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])

    # string() of a bool and a map: recorded before cel_string.STRING_CONVERSION_PATCH
    # ("True", cel-python's internals), and after (JSON text).
    wf = await platform.create(
        {"nodes": [echo("s", b="{{ string(true) }}", m="{{ string({'a': [1, null]}) }}")]}
    )
    for name in ("string_conversion_python", "string_conversion_json"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])

    # A number compared with null: recorded before cel_null.NULL_EQUALITY_PATCH (the
    # node failed, "no matching overload"), and after (false).
    wf = await platform.create({"nodes": [echo("n", same="{{ 1 == null }}")]})
    for name in ("null_equality_refused", "null_equality_false"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])

    # A list holding a null compared with one holding a number: recorded before
    # cel_null.NESTED_NULL_EQUALITY_PATCH (the node failed, "no matching overload"), and
    # after (false). `1 == null` first records NULL_EQUALITY_PATCH's marker, which must
    # not answer the lists.
    wf = await platform.create(
        {"nodes": [echo("n", bare="{{ 1 == null }}", same="{{ [1] == [null] }}")]}
    )
    for name in ("nested_null_equality_refused", "nested_null_equality_false"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])

    wf = await platform.create({"nodes": [delay("slow", 0.4), echo("next"), delay("long", 30)]})
    runs["paused_cancelled"] = await platform.trigger(wf)
    await platform.wait(wf, runs["paused_cancelled"], {"running"})
    base = f"/api/v1/workflows/{wf}/runs/{runs['paused_cancelled']}"
    await platform.api.post(f"{base}/pause")
    await asyncio.sleep(0.6)
    await platform.api.post(f"{base}/resume")
    await asyncio.sleep(0.5)
    await platform.api.post(f"{base}/cancel")
    await platform.wait(wf, runs["paused_cancelled"])
    # A gate decided while the run is paused, then the run cancelled during that pause
    # (recorded before such a cancel closed the gate's node run).
    wf = await platform.create({"nodes": [echo("gate", {"requiresConfirmation": True})]})
    runs["decided_paused_cancelled"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, runs["decided_paused_cancelled"], "gate")
    base = f"/api/v1/workflows/{wf}/runs/{runs['decided_paused_cancelled']}"
    await platform.api.post(f"{base}/pause")
    await approve(
        platform, wf, runs["decided_paused_cancelled"], stepId="gate", resolution="confirm"
    )
    await platform.api.post(f"{base}/cancel")
    await platform.wait(wf, runs["decided_paused_cancelled"])
    # The same in a parallel block, once the cancel closes the held gate's node run
    # (reviews.HELD_GATE_PATCH); the other branch's gate is still open.
    gates = [
        echo("gate", {"requiresConfirmation": True}),
        echo("open", {"requiresConfirmation": True}),
    ]
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel", "children": gates}
    wf = await platform.create({"nodes": [fan]})
    run_id = runs["held_gate_cancelled"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "open")
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await approve(platform, wf, run_id, stepId="gate", resolution="confirm")
    await platform.api.post(f"{base}/cancel")
    await platform.wait(wf, run_id)
    # A gate's timer firing while the run is paused, the run resumed after it
    # (recorded before such a decision moved the node run off awaiting_approval).
    timed = {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": "skip"}
    wf = await platform.create({"nodes": [echo("gate", timed), echo("after")]})
    run_id = runs["timed_out_paused"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await asyncio.sleep(1.5)
    await platform.api.post(f"{base}/resume")
    await platform.wait(wf, run_id)
    # Decisions that cancel the run, made while it is paused: a person's rejection (the
    # other branch's gate still open) and a timer's onTimeout: cancel. Recorded before
    # reviews.PAUSED_CANCEL_PATCH, when they cancelled the run only once it was resumed.
    cancelling = [
        echo("gate", {"requiresConfirmation": True, "onReject": "cancel"}),
        echo("open", {"requiresConfirmation": True}),
    ]
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel", "children": cancelling}
    wf = await platform.create({"nodes": [fan, echo("after")]})
    run_id = runs["rejected_paused_cancelled"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "open")
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    await asyncio.sleep(0.3)
    await platform.api.post(f"{base}/resume")
    await platform.wait(wf, run_id)
    timed = {"requiresConfirmation": True, "timeoutSeconds": 1, "onTimeout": "cancel"}
    wf = await platform.create({"nodes": [echo("gate", timed), echo("after")]})
    run_id = runs["timed_out_paused_cancelled"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await asyncio.sleep(1.5)
    await platform.api.post(f"{base}/resume")
    await platform.wait(wf, run_id)
    # The same rejection once it cancels the paused run at once (PAUSED_CANCEL_PATCH).
    wf = await platform.create({"nodes": [fan, echo("after")]})
    run_id = runs["rejected_paused_cancelled_at_once"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "open")
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    await platform.wait(wf, run_id)
    # A rejection that fails the run (onReject: retry, its retries spent), made while the
    # run is paused, the other branch's gate still open. Recorded before
    # reviews.PAUSED_FAIL_PATCH, when it failed the run only once it was resumed.
    failing = [
        echo("gate", {"requiresConfirmation": True, "onReject": "retry", "maxRetries": 0}),
        echo("open", {"requiresConfirmation": True}),
    ]
    fan = {"id": "fan", "name": "fan", "nodeType": "parallel", "children": failing}
    wf = await platform.create({"nodes": [fan, echo("after")]})
    run_id = runs["rejected_paused_failed"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "open")
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    await asyncio.sleep(0.3)
    await platform.api.post(f"{base}/resume")
    await platform.wait(wf, run_id)
    # The same rejection once it fails the paused run at once (PAUSED_FAIL_PATCH).
    wf = await platform.create({"nodes": [fan, echo("after")]})
    run_id = runs["rejected_paused_failed_at_once"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "open")
    await wait_for_gate(platform, wf, run_id, "gate")
    base = f"/api/v1/workflows/{wf}/runs/{run_id}"
    await platform.api.post(f"{base}/pause")
    await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    await platform.wait(wf, run_id)
    # The same rejection unpaused: recorded when its decision answered `running` (the
    # answer is the Update's result, which a replay does not compare).
    wf = await platform.create({"nodes": [fan, echo("after")]})
    run_id = runs["rejected_failed"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "open")
    await wait_for_gate(platform, wf, run_id, "gate")
    await approve(platform, wf, run_id, stepId="gate", resolution="reject")
    await platform.wait(wf, run_id)
    # A router's output review rejected with onReject: retry runs its choice again
    # (containers.ROUTER_RETRY_PATCH).
    router = {
        "id": "route",
        "name": "route",
        "nodeType": "router",
        "conditionCel": "'a'",
        "humanReview": {"requiresOutputReview": True, "onReject": "retry"},
        "choices": [
            {"name": "a", "steps": [delay("in-a", 0)]},
            {"name": "b", "steps": [echo("b")]},
        ],
    }
    wf = await platform.create({"nodes": [router]})
    run_id = runs["router_review_retried"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "route")
    await approve(platform, wf, run_id, stepId="route", resolution="reject", feedback="again")
    await wait_for_requirement(platform, wf, run_id, "route", retryCount=1)
    await approve(platform, wf, run_id, stepId="route", resolution="confirm")
    await platform.wait(wf, run_id)
    # A loop iteration rejected with onReject: retry runs again hearing the feedback
    # (containers.LOOP_RETRY_PATCH).
    looped = _loop("L", 1, [delay("tick", 0)])
    looped["humanReview"] = {"requiresIterationReview": True, "onReject": "retry"}
    wf = await platform.create({"nodes": [looped]})
    run_id = runs["loop_review_retried"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, run_id, "L")
    await approve(platform, wf, run_id, stepId="L", resolution="reject", feedback="again")
    await wait_for_requirement(platform, wf, run_id, "L", retryCount=1)
    await approve(platform, wf, run_id, stepId="L", resolution="confirm")
    await platform.wait(wf, run_id)
    # Steps that write the run's queued writes before their call (the outbox's hand-off):
    # the run's start; a decision (written before its answer, not handed); a failed
    # step's hand-off, which the outbox writes again.
    gated = delay("gated", 0, {"requiresConfirmation": True})
    bad = http_step("bad", f"{platform.peer_url}/status/400", stepConfig=retries(0, "skip"))
    wf = await platform.create({"nodes": [delay("first", 0), gated, bad, delay("last", 0)]})
    runs["handed"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, runs["handed"], "gated")
    await approve(platform, wf, runs["handed"], stepId="gated", resolution="confirm")
    await platform.wait(wf, runs["handed"])
    # The status search attribute upserted once per task (status_attribute.py): a gate at
    # the start, a pause and resume during a step, a run that continues as new.
    gate = echo("gate", {"requiresConfirmation": True})
    wf = await platform.create({"nodes": [gate, delay("slow", 0.6), echo("end")]})
    runs["status_shown"] = await platform.trigger(wf)
    await wait_for_gate(platform, wf, runs["status_shown"], "gate")
    await approve(platform, wf, runs["status_shown"], stepId="gate", resolution="confirm")
    await platform.wait(wf, runs["status_shown"], {"running"})
    base = f"/api/v1/workflows/{wf}/runs/{runs['status_shown']}"
    await platform.api.post(f"{base}/pause")
    await platform.api.post(f"{base}/resume")
    await platform.wait(wf, runs["status_shown"])
    runs["continued_status_shown"] = "run-replay-continued-status-shown"
    await _start_continued(
        platform, runs["continued_status_shown"], [_loop("L", 30, [delay("tick", 0)])]
    )
    runs["continued"] = "run-replay-continued"
    await _start_continued(platform, runs["continued"], [_loop("L", 30, [delay("tick", 0)])])
    runs["continued_nested"] = "run-replay-continued-nested"
    nested = {
        "id": "P",
        "name": "P",
        "nodeType": "parallel",
        "children": [
            _loop("L", 30, [delay("tick", 0)]),
            {
                "id": "M",
                "name": "M",
                "nodeType": "map",
                "itemsCel": "[1, 2, 3, 4, 5, 6]",
                "maxConcurrency": 2,
                "children": [delay("each", 0)],
            },
        ],
    }
    await _start_continued(platform, runs["continued_nested"], [nested, echo("after")])
    # A router whose conditionCel selected no choice completed, running none (recorded
    # before containers.EMPTY_ROUTE_PATCH, which fails it).
    router = {
        "id": "none",
        "name": "none",
        "nodeType": "router",
        "conditionCel": "input.picks",
        "choices": [{"name": "a", "steps": [echo("ra")]}, {"name": "b", "steps": [echo("rb")]}],
    }
    wf = await platform.create({"nodes": [router, delay("after-none", 0)]})
    run_id = runs["router_selected_none"] = await platform.trigger(wf, {"picks": []})
    await platform.wait(wf, run_id)
    # A route selection whose timer approved it with no suggestion failed the router
    # (recorded before containers.UNSUGGESTED_TIMEOUT_PATCH, which skips it).
    unsuggested = {
        **router,
        "id": "pick",
        "name": "pick",
        "humanReview": {
            "requiresUserInput": True,
            "timeoutSeconds": 1,
            "onTimeout": "approve",
        },
    }
    wf = await platform.create({"nodes": [unsuggested, delay("after-pick", 0)]})
    run_id = runs["route_timed_out_unsuggested"] = await platform.trigger(wf, {"picks": []})
    await platform.wait(wf, run_id)
    # A router whose conditionCel named a choice twice ran it once but output the
    # several-choices map {a: …} (recorded before containers.DUPLICATE_ROUTE_PATCH, which
    # selects it once); a condition on that output picks which delay runs next.
    twice = {**router, "id": "twice", "name": "twice"}
    after_twice = {
        "id": "shape",
        "name": "shape",
        "nodeType": "condition",
        "conditionCel": "'a' in previous_step_content",
        "trueSteps": [delay("as-map", 0)],
        "falseSteps": [delay("as-output", 0)],
    }
    wf = await platform.create({"nodes": [twice, after_twice]})
    run_id = runs["router_selected_twice"] = await platform.trigger(wf, {"picks": ["a", "a"]})
    await platform.wait(wf, run_id)
    # Long chains of inline steps: 120 ran in one activation, and 2,000 failed on the
    # expression budget one workflow task shares (both recorded before the inline steps'
    # slices, inline_slices.INLINE_SLICE_PATCH); `inline_chain_sliced`, the same 120,
    # recorded with the slices.
    chains = (
        ("inline_chain", 120),
        ("inline_chain_budget_spent", 2000),
        ("inline_chain_sliced", 120),
    )
    for name, iterations in chains:
        counting = transform("inc", v="previous_step_content.v + 1")
        seed = transform("seed", v="0")
        wf = await platform.create({"nodes": [seed, _loop("count", iterations, [counting])]})
        run_id = runs[name] = await platform.trigger(wf)
        await platform.wait(wf, run_id, within=60)
    # Inline steps' node runs handed to the next activity step (the outbox's hand-off of
    # node runs that end): a loop of an inline step and an activity, then a step that fails
    # with the hand-off, which the outbox writes again.
    bad = http_step("bad", f"{platform.peer_url}/status/400", stepConfig=retries(0, "skip"))
    body = _loop("L", 3, [echo("b"), delay("a", 0)])
    wf = await platform.create({"nodes": [body, echo("before-bad"), bad, delay("end", 0)]})
    run_id = runs["inline_handed"] = await platform.trigger(wf)
    await platform.wait(wf, run_id)

    # Inline outputs adding up to a slice's bytes end it before its fifty steps (a patch
    # marker at the first such cut): twelve echoes of a 150 KB input.
    items = {
        "id": "M",
        "name": "M",
        "nodeType": "map",
        "itemsCel": "input.items",
        "maxConcurrency": 12,
        "children": [echo("e")],
    }
    wf = await platform.create({"nodes": [items, echo("after")]})
    pad = {"items": list(range(12)), "pad": "x" * 150_000}
    run_id = runs["inline_sliced_by_bytes"] = await platform.trigger(wf, pad)
    await platform.wait(wf, run_id)
    # Containers' expressions in slices (inline_slices.CONTAINER_SLICE_PATCH). The audit's
    # loop of 3,000 conditions and nothing else: recorded before (it failed after 2,500 on
    # the task's share) and after (cut every 50). A loop of a condition and an inline step:
    # recorded before (cut every 50 inline steps) and after (every 25 iterations). A map's
    # items, each a condition, waiting at the same cuts: recorded after.
    never = {
        "id": "c",
        "name": "c",
        "nodeType": "condition",
        "conditionCel": "false",
        "trueSteps": [echo("s")],
        "falseSteps": [],
    }
    mixed = [never, transform("t", v="iteration")]
    for name, children, iterations in (
        ("condition_chain_budget_spent", [never], 3000),
        ("condition_chain_sliced", [never], 3000),
        ("mixed_chain_sliced_by_inline_steps", mixed, 120),
        ("mixed_chain_sliced", mixed, 120),
    ):
        wf = await platform.create({"nodes": [_loop("L", iterations, children)]})
        run_id = runs[name] = await platform.trigger(wf)
        await platform.wait(wf, run_id, within=60)
    conditions = {**items, "maxConcurrency": 120, "children": [never]}
    wf = await platform.create({"nodes": [conditions]})
    run_id = runs["map_conditions_sliced"] = await platform.trigger(wf, {"items": list(range(120))})
    await platform.wait(wf, run_id)
    runs["paused_at_start"] = await _paused_at_start(platform)
    # A step whose last attempt Temporal times out: recorded before
    # step_runner.TIMEOUT_DETAILS_PATCH ("step timed out (start-to-close)"), and after (the
    # limit and what its heartbeats said it waited for).
    slow = delay("slow", 8) | {"stepConfig": {"timeoutSeconds": 1, "maxRetries": 0}}
    wf = await platform.create({"nodes": [slow]})
    for name in ("step_timed_out_unnamed", "step_timed_out_named"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])
    # Gates whose one retry is spent: one skips its step (onError: skip), the other fails
    # the run. Recorded before reviews.RETRY_WORDING_PATCH ("after 1 retries"), and after.
    spent = {"requiresOutputReview": True, "onReject": "retry", "maxRetries": 1}
    skipped = echo("skipped", spent) | {"stepConfig": {"onError": "skip"}}
    wf = await platform.create({"nodes": [skipped, echo("failed", spent)]})
    for name in ("rejected_after_1_retries", "rejected_after_1_retry"):
        run_id = runs[name] = await platform.trigger(wf)
        for gate in ("skipped", "failed"):
            for retry_count in (0, 1):
                await wait_for_requirement(platform, wf, run_id, gate, retryCount=retry_count)
                await approve(platform, wf, run_id, stepId=gate, resolution="reject")
        await platform.wait(wf, run_id)
    # A router whose ternary's condition fails: recorded while the error said only
    # "no matching overload for _?_:_ applied to (CELEvalError, …)" (no patch: the text
    # rides in the failure and the outbox's write), and since it says the condition's own.
    ternary = "input.amount == 2 ? 'a' : 'b'"
    choices = [{"name": "a", "steps": [echo("ra")]}, {"name": "b", "steps": [echo("rb")]}]
    route = {"id": "r", "name": "r", "nodeType": "router", "conditionCel": ternary}
    wf = await platform.create({"nodes": [route | {"choices": choices}]})
    for name in ("ternary_error_overload", "ternary_error_cause"):
        runs[name] = await platform.trigger(wf, {"amount": 2.0})
        await platform.wait(wf, runs[name])
    # Inline steps (a skipped one too): recorded before RunInput.inline_events_attempt
    # (their node events carried no attempt), and after (attempt 1: queued writes grew).
    skipped = echo("bad", x="{{ input.missing }}") | {"stepConfig": {"onError": "skip"}}
    wf = await platform.create(
        {"nodes": [echo("e"), skipped, transform("t", x="1"), delay("d", 0)]}
    )
    for name in ("inline_events_unnumbered", "inline_events_numbered"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name])
    # A map over a step's list, a parallel in each item, continued as new: recorded while
    # each branch carried a whole copy of its scope (the step's list too), and since each
    # carries what it changed (no patch: the continue-as-new input is not compared; the
    # resumed execution starts from it).
    items = parallel("P", delay("x", 0), echo("y", i="{{ index }}"), id="P")
    fan = {"id": "M", "name": "M", "nodeType": "map", "itemsCel": "previous_step_content.rows"}
    fan |= {"maxConcurrency": 3, "children": [delay("a", 0), items]}
    rows = transform("rows", rows="['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7']")
    last = transform("last", n="size(previous_step_outputs.rows.rows)")
    for name in ("continued_map_copied", "continued_map_changed", "continued_map_pooled"):
        runs[name] = f"run-replay-{name.replace('_', '-')}"
        await _start_continued(platform, runs[name], [rows, fan, last])
    # A map whose items' steps carry a padded input: recorded before
    # RunInput.step_input_bytes (all scheduled in one task), and after.
    wf = await platform.create({"nodes": [_padded_map()]})
    runs["step_inputs_unbounded"] = await platform.trigger(wf, _PADDED)
    await platform.wait(wf, runs["step_inputs_unbounded"])
    # The same after, its budget a few items' inputs: the others wait their turn.
    run_id = runs["step_inputs_bounded"] = "run-replay-step-inputs-bounded"
    wf = await start_continuing(
        platform, run_id, [_padded_map()], after_events=None, initial_input=_PADDED,
        step_input_bytes=20_000,
    )  # fmt: skip
    await platform.wait(wf, run_id)
    # A map of more items than its maxConcurrency, and a parallel of more children than
    # its: recorded while every branch got its task and scope at once, and since a pool of
    # maxConcurrency runners takes them in turn (RunInput.branches_pooled).
    pooled = {"id": "PM", "name": "PM", "nodeType": "map", "itemsCel": "[1, 2, 3, 4, 5, 6, 7]"}
    pooled |= {"maxConcurrency": 3, "children": [delay("d", 0), echo("e", i="{{ index }}")]}
    wide = parallel("PP", *[delay(f"p{i}", 0) for i in range(5)], id="PP", maxConcurrency=2)
    for kind, nodes in (("map", [pooled, echo("after")]), ("parallel", [wide, echo("after")])):
        wf = await platform.create({"nodes": nodes})
        for name in (f"{kind}_all_at_once", f"{kind}_pooled"):
            runs[name] = await platform.trigger(wf)
            await platform.wait(wf, runs[name])
    # A step whose activity an operator resets in Temporal as it runs: recorded before
    # step_runner.ACTIVITY_RESET_PATCH (the run failed), and after (the step ran again).
    wf = await platform.create({"nodes": [delay("nap", 3), echo("after")]})
    for name in ("step_reset_failed", "step_reset_ran_again"):
        runs[name] = await _reset_while_running(platform, wf)
    # Eight branches each rendering a distinct ~4,000-node template: recorded while only
    # evaluating was charged (one slice), and since compiling is too
    # (expressions.COMPILE_CHARGE_PATCH: cut after three branches).
    compiled = parallel("CP", *_distinct_costly_echoes(8), id="CP", maxConcurrency=8)
    wf = await platform.create({"nodes": [compiled, echo("after")]})
    for name in ("compile_uncharged", "compile_charged"):
        runs[name] = await platform.trigger(wf)
        await platform.wait(wf, runs[name], within=60)
    return runs


async def _reset_while_running(platform: Platform, wf: str) -> str:
    """A run of `wf`, its first step's activity ("nap") reset once it has started."""
    run_id = await platform.trigger(wf)
    handle = platform.client.get_workflow_handle(run_id)
    activity_id = node_run_id(run_id, "nap", 1)

    async def started() -> bool:
        pending = (await handle.describe()).raw_description.pending_activities
        return any(
            a.activity_id == activity_id
            and a.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
            for a in pending
        )

    await eventually(started)
    await asyncio.sleep(1.5)  # a heartbeat sent: the attempt hears of the reset at its next
    await platform.client.workflow_service.reset_activity(
        ResetActivityRequest(
            namespace=platform.client.namespace,
            execution=WorkflowExecution(workflow_id=run_id),
            id=activity_id,
        )
    )
    await platform.wait(wf, run_id, within=30)
    return run_id


def _distinct_costly_echoes(count: int) -> list[dict[str, Any]]:
    """`count` echo steps, each one template of about 4,000 syntax-tree nodes of its own."""
    ones = ",".join(["1"] * 400)
    return [echo(f"e{i}", n=f"{{{{ size([{ones},{i}]) }}}}") for i in range(count)]


_PADDED = {"items": list(range(6)), "pad": "p" * 4000}


def _padded_map() -> dict[str, Any]:
    children = [delay("d", 0), transform("t", i="item")]
    return {"id": "M", "name": "M", "nodeType": "map", "itemsCel": "input.items",
            "maxConcurrency": 6, "children": children}  # fmt: skip


async def _paused_at_start(platform: Platform) -> str:
    """A run whose pause came before its first step: taken in its first workflow task, as
    the workflow starts (PAUSED_AT_START_PATCH), then resumed."""
    queue = f"later-{uuid.uuid4()}"
    wf, record = await running_without_a_worker(platform, task_queue=queue)
    handle = platform.client.get_workflow_handle(record.id)
    pausing = asyncio.create_task(handle.execute_update(PAUSE, ControlRequest(requested_by="t")))
    await asyncio.sleep(0.5)  # admitted, waiting for a worker
    async with (
        executor_registry() as registry,
        build_worker(platform.client, task_queue=queue, store=platform.store, executor=registry),
    ):
        await pausing
        await platform.wait(wf, record.id, {"paused"})
        await handle.execute_update(RESUME, ControlRequest(requested_by="t"))
        await platform.wait(wf, record.id)
    return record.id


def _loop(node_id: str, iterations: int, children: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": node_id,
        "name": node_id,
        "nodeType": "loop",
        "loopConfig": {"maxIterations": iterations},
        "children": children,
    }


async def _start_continued(platform: Platform, run_id: str, nodes: list[dict[str, Any]]) -> None:
    """A run long enough to continue as new (its first two executions are recorded)."""
    wf = await start_continuing(platform, run_id, nodes, after_events=20)
    await platform.wait(wf, run_id)


@pytest.mark.skipif(
    not os.environ.get("TRELLIS_RECORD_HISTORIES"),
    reason="records fixtures only when TRELLIS_RECORD_HISTORIES=1",
)
async def test_record_histories(platform: Platform) -> None:
    HISTORIES.mkdir(exist_ok=True)
    again = os.environ.get("TRELLIS_RECORD_HISTORIES") == "all"
    for name, run_id in (await _record_all(platform)).items():
        executions = [e async for e in platform.client.list_workflows(f"WorkflowId = '{run_id}'")]
        executions.sort(key=lambda e: e.start_time)
        # The first execution; for a continued run also the one it continued as (which
        # starts from the carried position).
        names = [name, f"{name}_resumed"][: 2 if name.startswith("continued_") else 1]
        for file_name, execution in zip(names, executions, strict=False):
            path = HISTORIES / f"{file_name}.json"
            if path.exists() and (not again or name in PRE_PATCH):
                continue
            handle = platform.client.get_workflow_handle(run_id, run_id=execution.run_id)
            path.write_text((await handle.fetch_history()).to_json())


def _load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, json.loads(path.read_text()))


def _history_files() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))


# Each replayer below runs in debug mode, which takes the SDK's deadlock detector off: a
# replay compares commands and results, not time, and the detector (a task that does not
# yield within 2 s of wall clock) failed the CEL-budget history under a load of 15 (it
# took 1.8 s to replay alone there). Workers keep the detector.


@pytest.mark.parametrize("path", _history_files(), ids=lambda p: p.stem)
async def test_recorded_history_replays(path: Path) -> None:
    history = _load(path)
    replayer = Replayer(
        workflows=[TrellisRun], data_converter=pydantic_data_converter, debug_mode=True
    )
    await replayer.replay_workflow(history)


class _Results(Interceptor):
    """Keeps what each replayed workflow returned."""

    def __init__(self) -> None:
        self.returned: list[Any] = []

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        returned = self.returned

        class Kept(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                result = await super().execute_workflow(input)
                returned.append(result)
                return result

        return Kept


def _completed_with(path: Path) -> list[Any] | None:
    """The result a recorded run completed with, as JSON; None for a run that did not."""
    for event in json.loads(path.read_text())["events"]:
        if event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED":
            attributes = event["workflowExecutionCompletedEventAttributes"]
            payloads = attributes.get("result", {}).get("payloads", [])
            return [json.loads(base64.b64decode(p["data"])) for p in payloads]
    return None


@pytest.mark.parametrize(
    "path", [p for p in _history_files() if _completed_with(p) is not None], ids=lambda p: p.stem
)
async def test_recorded_history_replays_to_the_result_it_completed_with(path: Path) -> None:
    # The replayer compares commands, not the values a run computes: a change of a value
    # (a step's config, the final output) without a patch replayed "fine" (found by a
    # review: `string()`'s history passed with its patch taken out). What the run returned
    # must come out again.
    results = _Results()
    replayer = Replayer(
        workflows=[TrellisRun],
        data_converter=pydantic_data_converter,
        interceptors=[results],
        debug_mode=True,
    )
    await replayer.replay_workflow(_load(path))
    converter = pydantic_data_converter.payload_converter
    returned = [json.loads(converter.to_payloads([r])[0].data) for r in results.returned]
    assert returned == _completed_with(path)


@pytest.mark.parametrize("path", _history_files(), ids=lambda p: p.stem)
async def test_recorded_history_replays_with_tracing_on(path: Path) -> None:
    # A traced worker replays with Temporal's tracing interceptor (app/tracing.py) on.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    replayer = Replayer(
        workflows=[TrellisRun],
        data_converter=pydantic_data_converter,
        interceptors=temporal_interceptors(provider),
        debug_mode=True,
    )
    await replayer.replay_workflow(_load(path))
    # Workflow spans are made once, when the run first executes, never on replay.
    assert not [s for s in exporter.get_finished_spans() if "Workflow" in s.name]


def test_every_pre_patch_history_is_recorded() -> None:
    # `all` skips these names: a misspelt one would be re-recorded after all.
    assert {p.stem for p in _history_files()} >= PRE_PATCH


def test_every_representative_history_is_recorded() -> None:
    assert {p.stem for p in _history_files()} >= {
        "tree",
        "failed",
        "gates",
        "paused_cancelled",
        "decided_paused_cancelled",
        "held_gate_cancelled",
        "timed_out_paused",
        "rejected_paused_cancelled",
        "timed_out_paused_cancelled",
        "rejected_paused_cancelled_at_once",
        "rejected_paused_failed",
        "rejected_paused_failed_at_once",
        "rejected_failed",
        "handed",
        "status_shown",
        "continued_status_shown",
        "continued_status_shown_resumed",
        "continued",
        "continued_nested",
        "inline_chain",
        "inline_chain_budget_spent",
        "inline_chain_sliced",
        "continued_nested_resumed",
        "inline_handed",
        "inline_sliced_by_bytes",
        "form_defaults_recorded",
        "parallel_branch_copied",
        "parallel_branch_writes",
        "non_finite_passed_null",
        "non_finite_failed",
        "string_conversion_python",
        "string_conversion_json",
        "null_equality_refused",
        "null_equality_false",
        "nested_null_equality_refused",
        "nested_null_equality_false",
        "route_unicode_form_failed",
        "route_unicode_form_selected",
        "condition_chain_budget_spent",
        "condition_chain_sliced",
        "mixed_chain_sliced_by_inline_steps",
        "mixed_chain_sliced",
        "map_conditions_sliced",
        "step_timed_out_unnamed",
        "step_timed_out_named",
        "step_reset_failed",
        "step_reset_ran_again",
        "ternary_error_overload",
        "ternary_error_cause",
        "inline_events_unnumbered",
        "inline_events_numbered",
        "continued_map_copied",
        "continued_map_copied_resumed",
        "continued_map_changed",
        "continued_map_changed_resumed",
        "step_inputs_unbounded",
        "step_inputs_bounded",
        "map_all_at_once",
        "map_pooled",
        "parallel_all_at_once",
        "parallel_pooled",
        "continued_map_pooled",
        "continued_map_pooled_resumed",
        "compile_uncharged",
        "compile_charged",
    }
