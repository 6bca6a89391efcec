"""A2A agent steps through the API: artifacts as output, the agent's failures as errors."""

from __future__ import annotations

from tests.builders import retries, step
from tests.e2e.helpers import node_runs
from tests.events.sse import read_all
from tests.support.platform import Platform


async def test_an_agents_artifact_is_the_output(platform: Platform) -> None:
    run = await platform.run(
        {
            "nodes": [
                step(
                    "Onboard",
                    "a2a-standard-onboarding-agent",
                    {"message": "Onboard {{ customerName }}", "trialDays": 14},
                )
            ]
        },
        {"customerName": "Ada"},
    )

    assert run["status"] == "completed", run
    onboard = node_runs(run)["Onboard"]
    output = onboard["outputSnapshot"]
    assert output["agent"] == "a2a-standard-onboarding-agent"
    # The text part carries config.message; the data part the rendered config and the run.
    assert output["text"] == "Onboard Ada"
    assert output["config"] == {"message": "Onboard Ada", "trialDays": 14}
    assert output["run"]["runId"] == run["id"]
    assert output["run"]["nodeName"] == "Onboard"
    assert onboard["resolvedExecutor"] == {"kind": "a2a", "key": "a2a-standard-onboarding-agent"}


async def test_an_agent_without_streaming_is_polled_to_completion(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Create", "account-creator-v2", {"plan": "pro"})]})

    assert run["status"] == "completed", run
    assert node_runs(run)["Create"]["outputSnapshot"]["agent"] == "account-creator-v2"


async def test_a_failing_agent_fails_the_step_with_its_message(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Try", "failing-agent", stepConfig=retries(1))]})

    assert run["status"] == "failed", run
    tried = node_runs(run)["Try"]
    assert tried["attempt"] == 2  # a failed task is worth retrying
    assert "failing-agent could not do it: simulated failure" in tried["error"]
    assert "failing-agent could not do it" in run["errorSummary"]


async def test_an_agent_asking_for_input_fails_the_attempt_saying_so(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Ask", "input-agent")]})

    assert run["status"] == "failed", run
    error = node_runs(run)["Ask"]["error"]
    assert "asked for input (input-required)" in error
    assert "Which plan should the account get?" in error


async def test_a_rejecting_agent_fails_at_once(platform: Platform) -> None:
    run = await platform.run({"nodes": [step("Ask", "rejecting-agent", stepConfig=retries(3))]})

    assert run["status"] == "failed", run
    rejected = node_runs(run)["Ask"]
    assert rejected["attempt"] == 1
    assert "rejected the task" in rejected["error"]
    assert "does not handle this kind of task" in rejected["error"]


async def test_a_failing_agent_under_on_error_skip_lets_the_run_complete(
    platform: Platform,
) -> None:
    run = await platform.run(
        {
            "nodes": [
                step("Try", "failing-agent", stepConfig={"onError": "skip"}),
                step("After", "account-manager-v1", {"seen": "{{ previous_step_outputs }}"}),
            ]
        }
    )

    assert run["status"] == "completed", run
    nodes = node_runs(run)
    assert nodes["Try"]["status"] == "skipped"
    assert nodes["After"]["outputSnapshot"]["config"]["seen"] == {"Try": None}


async def test_an_agent_whose_url_carries_a_query_runs_a_step(platform: Platform) -> None:
    # Its catalog URL is `…/agents/signed-agent?sig=…`, and it refuses any request without
    # the query: the card (discovery) and the step's call both carry it.
    run = await platform.run({"nodes": [step("Sign", "signed-agent", {"task": "Sign it"})]})

    assert run["status"] == "completed", run
    signed = node_runs(run)["Sign"]
    assert signed["outputSnapshot"]["agent"] == "signed-agent"
    assert signed["outputSnapshot"]["text"] == "Sign it"


async def test_a_retry_after_a_timeout_says_it_however_soon_it_starts(
    platform: Platform,
) -> None:
    # The timed-out attempt hears of its timeout at its next heartbeat and writes its error
    # once the agent has answered its tasks/cancel: a retry starting sooner read no error
    # and said the attempt "was lost with its worker".
    config = {"maxRetries": 1, "timeoutSeconds": 2, "backoffBaseSeconds": 0.05}
    hangs = step("Create", "slow-agent", {"seconds": 600, "cancelSeconds": 3}, stepConfig=config)
    workflow_id = await platform.create({"nodes": [hangs]})
    run_id = await platform.trigger(workflow_id)
    run = await platform.wait(workflow_id, run_id)

    assert run["status"] == "failed", run
    events = await read_all(platform.api, f"/api/v1/workflows/{workflow_id}/runs/{run_id}/events")
    retried = [m.json() for m in events if m.event == "node_started"][-1]
    assert retried["attempt"] == 2, retried
    assert retried["previousError"] == (
        "step timed out (start-to-close, timeoutSeconds 2) waiting for A2A agent slow-agent"
    ), retried
