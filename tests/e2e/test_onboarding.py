"""The contract's onboarding example (sections 3 and 4) runs end to end on the test peers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.api.examples import CREATE_EXAMPLE, UPDATE_EXAMPLE
from tests.e2e.helpers import node_runs
from tests.support.platform import Platform

CUSTOMER = {
    "customerEmail": "john.doe@company.com",
    "customerName": "John Doe",
    "phoneNumber": "+1-555-0123",
    "companyName": "Acme Corporation",
    "industry": "technology",
}


def mcp(tool: str) -> dict[str, Any]:
    return {"kind": "mcp", "key": tool, "server": "peer-http", "tool": tool}


def agent_output(node_run: dict[str, Any]) -> dict[str, Any]:
    """The echo agent's artifact: who answered, with the config and run it received."""
    output: dict[str, Any] = node_run["outputSnapshot"]
    assert output["run"]["nodeRunId"] == node_run["id"]
    return output


async def run_onboarding(platform: Platform, workflow_id: str, customer_type: str) -> Any:
    run_id = await platform.trigger(workflow_id, {**CUSTOMER, "customerType": customer_type})
    return await platform.wait(workflow_id, run_id)


async def updated_onboarding(platform: Platform) -> str:
    workflow_id = await platform.create(copy.deepcopy(CREATE_EXAMPLE))
    response = await platform.api.put(
        f"/api/v1/workflows/{workflow_id}", json=copy.deepcopy(UPDATE_EXAMPLE)
    )
    assert response.status_code == 200, response.text
    assert response.json()["enabled"] is True
    return workflow_id


async def test_create_example_enterprise_runs_the_parallel_path(platform: Platform) -> None:
    workflow_id = await platform.create(copy.deepcopy(CREATE_EXAMPLE))

    run = await run_onboarding(platform, workflow_id, "enterprise")

    assert run["status"] == "completed", run
    nodes = node_runs(run)
    assert "Standard Onboarding" not in nodes
    assert {name: n["status"] for name, n in nodes.items()} == dict.fromkeys(
        [
            "Validate Customer Email",
            "Check Customer Type",
            "Enterprise Onboarding Path",
            "Send Welcome Email",
            "Create Premium Account",
            "Notify Sales Team",
            "Send Onboarding Complete Email",
        ],
        "completed",
    )
    # The MCP peer echoes the arguments it was called with: the rendered config.
    assert nodes["Validate Customer Email"]["outputSnapshot"] == {
        "validationRules": ["format", "domain", "mx_record"],
        "allowedDomains": ["company.com", "partner.com"],
    }
    assert nodes["Validate Customer Email"]["resolvedExecutor"] == mcp("mcp-email-validator")
    assert nodes["Check Customer Type"]["inputSnapshot"]["branch"] == "trueSteps"
    assert nodes["Send Welcome Email"]["outputSnapshot"] == {
        "template": "enterprise_welcome",
        "fromAddress": "onboarding@company.com",
    }
    assert nodes["Send Welcome Email"]["resolvedExecutor"] == mcp("mcp-email-sender")
    assert nodes["Notify Sales Team"]["outputSnapshot"] == {
        "channel": "#sales-enterprise",
        "messageTemplate": "New enterprise customer: John Doe",
    }
    assert nodes["Notify Sales Team"]["resolvedExecutor"] == mcp("mcp-slack-notifier")
    premium = nodes["Create Premium Account"]
    assert agent_output(premium)["agent"] == "account-manager-v1"
    assert agent_output(premium)["config"] == {
        "accountType": "premium",
        "features": ["sso", "api_access", "priority_support"],
    }
    assert premium["resolvedExecutor"] == {
        "kind": "a2a",
        "key": "account-manager-v1",
        "poolIndex": 0,
        "strategy": "failover",
        "reason": "failover: first available in pool order",
    }
    assert (
        nodes["Enterprise Onboarding Path"]["outputSnapshot"]["Create Premium Account"]
        == (premium["outputSnapshot"])
    )
    assert run["finalOutput"] == {"template": "onboarding_complete", "includeLoginLink": True}


async def test_create_example_standard_runs_the_onboarding_agent(platform: Platform) -> None:
    workflow_id = await platform.create(copy.deepcopy(CREATE_EXAMPLE))

    run = await run_onboarding(platform, workflow_id, "standard")

    assert run["status"] == "completed", run
    nodes = node_runs(run)
    assert "Enterprise Onboarding Path" not in nodes
    assert nodes["Check Customer Type"]["inputSnapshot"]["branch"] == "falseSteps"
    standard = nodes["Standard Onboarding"]
    assert standard["status"] == "completed"
    assert agent_output(standard)["agent"] == "a2a-standard-onboarding-agent"
    assert agent_output(standard)["config"] == {"accountType": "standard", "trialDays": 14}
    assert standard["resolvedExecutor"] == {"kind": "a2a", "key": "a2a-standard-onboarding-agent"}
    assert nodes["Send Onboarding Complete Email"]["status"] == "completed"


async def test_update_example_enterprise_route_runs_its_parallel_steps(
    platform: Platform,
) -> None:
    workflow_id = await updated_onboarding(platform)

    run = await run_onboarding(platform, workflow_id, "enterprise")

    assert run["status"] == "completed", run
    nodes = node_runs(run)
    assert nodes["Route by Customer Type"]["inputSnapshot"]["selected"] == ["enterprise"]
    assert nodes["Verify Phone Number"]["outputSnapshot"] == {
        "countryCode": "US",
        "sendVerificationSMS": True,
        "timeout": 300,
    }
    assert nodes["Verify Phone Number"]["resolvedExecutor"] == mcp("mcp-phone-verifier")
    assert nodes["Send Enterprise Welcome Email"]["outputSnapshot"]["cc"] == ["sales@company.com"]
    premium = nodes["Create Premium Account"]
    assert agent_output(premium)["agent"] == "a2a-account-manager"
    assert agent_output(premium)["config"]["slaLevel"] == "gold"
    assert premium["resolvedExecutor"] == {"kind": "a2a", "key": "a2a-account-manager"}
    assert nodes["Assign Account Manager"]["outputSnapshot"] == {
        "action": "assign_account_manager",
        "tier": "enterprise",
    }
    assert nodes["Assign Account Manager"]["resolvedExecutor"] == mcp("mcp-crm-integration")
    assert "Business Onboarding" not in nodes and "Standard Onboarding" not in nodes
    assert run["finalOutput"]["template"] == "onboarding_complete_v2"


@pytest.mark.parametrize(
    ("customer_type", "step_name", "agent", "trial_days"),
    [
        ("business", "Business Onboarding", "a2a-business-onboarding-agent", 30),
        ("standard", "Standard Onboarding", "a2a-standard-onboarding-agent", 14),
    ],
)
async def test_update_example_routes_to_the_customer_types_agent(
    platform: Platform, customer_type: str, step_name: str, agent: str, trial_days: int
) -> None:
    workflow_id = await updated_onboarding(platform)

    run = await run_onboarding(platform, workflow_id, customer_type)

    assert run["status"] == "completed", run
    nodes = node_runs(run)
    assert nodes["Route by Customer Type"]["inputSnapshot"]["selected"] == [customer_type]
    assert "Enterprise Onboarding" not in nodes
    onboarding = nodes[step_name]
    assert agent_output(onboarding)["agent"] == agent
    assert agent_output(onboarding)["config"]["trialDays"] == trial_days
    assert onboarding["resolvedExecutor"] == {"kind": "a2a", "key": agent}
    assert nodes["Setup Complete Notification"]["status"] == "completed"
    assert nodes["Verify Phone Number"]["status"] == "completed"
