"""The contract's examples, copied verbatim (seeds/000_80a6f643eb01c0c2.txt)."""

# ruff: noqa: E501

from __future__ import annotations

import json
from typing import Any

GET_EXAMPLE: dict[str, Any] = json.loads(
    r"""
{
  "id": "wf-demo-id",
  "name": "Customer Onboarding Workflow",
  "description": "Automated workflow for new customer onboarding",
  "canvas": {
    "viewport": {
      "x": 0,
      "y": 0,
      "zoom": 1
    }
  },
  "nodes": [
    {
      "id": "node-1",
      "name": "Validate Customer Data",
      "nodeType": "step",
      "position": {
        "x": 80,
        "y": 220
      },
      "executorKey": "data-validator",
      "a2aPool": [],
      "stepConfig": {
        "maxRetries": 3,
        "onError": "retry",
        "backoffBaseSeconds": 2.0,
        "backoffMaxSeconds": 30.0
      },
      "config": {
        "validationRules": [
          "email",
          "phone"
        ]
      },
      "children": [],
      "trueSteps": [],
      "falseSteps": [],
      "choices": [],
      "conditionCel": null,
      "loopConfig": null
    },
    {
      "id": "node-2",
      "name": "Parallel Processing",
      "nodeType": "parallel",
      "executorKey": null,
      "a2aPool": [],
      "stepConfig": null,
      "config": {},
      "children": [
        {
          "id": "node-2-1",
          "name": "Send Welcome Email",
          "nodeType": "step",
          "position": {
            "x": 360,
            "y": 160
          },
          "executorKey": "email-sender",
          "a2aPool": [],
          "stepConfig": null,
          "config": {
            "template": "welcome"
          },
          "children": [],
          "trueSteps": [],
          "falseSteps": [],
          "choices": [],
          "conditionCel": null,
          "loopConfig": null
        },
        {
          "id": "node-2-2",
          "name": "Create User Account",
          "nodeType": "step",
          "position": {
            "x": 360,
            "y": 300
          },
          "executorKey": null,
          "a2aPool": [
            "account-creator-v1",
            "account-creator-v2"
          ],
          "stepConfig": {
            "maxRetries": 5,
            "onError": "retry",
            "backoffBaseSeconds": 1.0,
            "backoffMaxSeconds": 60.0
          },
          "config": {},
          "children": [],
          "trueSteps": [],
          "falseSteps": [],
          "choices": [],
          "conditionCel": null,
          "loopConfig": null
        }
      ],
      "trueSteps": [],
      "falseSteps": [],
      "choices": [],
      "conditionCel": null,
      "loopConfig": null
    },
    {
      "id": "node-3",
      "name": "Route by Customer Type",
      "nodeType": "condition",
      "position": {
        "x": 640,
        "y": 220
      },
      "executorKey": null,
      "a2aPool": [],
      "stepConfig": null,
      "config": {},
      "children": [],
      "trueSteps": [
        {
          "id": "node-3-t1",
          "name": "Enterprise Provisioning",
          "nodeType": "step",
          "position": {
            "x": 920,
            "y": 160
          },
          "executorKey": "mcp-enterprise-provisioner",
          "a2aPool": [],
          "stepConfig": null,
          "config": {},
          "children": [],
          "trueSteps": [],
          "falseSteps": [],
          "choices": [],
          "conditionCel": null,
          "loopConfig": null
        }
      ],
      "falseSteps": [
        {
          "id": "node-3-f1",
          "name": "Standard Provisioning",
          "nodeType": "step",
          "position": {
            "x": 920,
            "y": 300
          },
          "executorKey": "mcp-standard-provisioner",
          "a2aPool": [],
          "stepConfig": null,
          "config": {},
          "children": [],
          "trueSteps": [],
          "falseSteps": [],
          "choices": [],
          "conditionCel": null,
          "loopConfig": null
        }
      ],
      "choices": [],
      "conditionCel": "input.customerType == 'enterprise'",
      "loopConfig": null
    }
  ],
  "enabled": false,
  "createdAt": "2024-01-15T10:30:00Z",
  "updatedAt": "2024-01-20T15:45:00Z"
}
"""
)

CREATE_EXAMPLE: dict[str, Any] = json.loads(
    r"""
{
  "name": "Customer Onboarding Workflow",
  "description": "Automated workflow for new customer onboarding with email validation, parallel processing, and conditional routing",
  "canvas": {
    "viewport": {
      "x": 0,
      "y": 0,
      "zoom": 1
    }
  },
  "nodes": [
    {
      "name": "Validate Customer Email",
      "nodeType": "step",
      "position": {
        "x": 80,
        "y": 220
      },
      "executorKey": "mcp-email-validator",
      "stepConfig": {
        "maxRetries": 3,
        "onError": "retry",
        "backoffBaseSeconds": 2.0,
        "backoffMaxSeconds": 30.0
      },
      "config": {
        "validationRules": [
          "format",
          "domain",
          "mx_record"
        ],
        "allowedDomains": [
          "company.com",
          "partner.com"
        ]
      }
    },
    {
      "name": "Check Customer Type",
      "nodeType": "condition",
      "position": {
        "x": 360,
        "y": 220
      },
      "conditionCel": "input.customerType == 'enterprise'",
      "trueSteps": [
        {
          "name": "Enterprise Onboarding Path",
          "nodeType": "parallel",
          "position": {
            "x": 640,
            "y": 160
          },
          "children": [
            {
              "name": "Send Welcome Email",
              "nodeType": "step",
              "position": {
                "x": 920,
                "y": 120
              },
              "executorKey": "mcp-email-sender",
              "stepConfig": {
                "maxRetries": 2,
                "onError": "skip"
              },
              "config": {
                "template": "enterprise_welcome",
                "fromAddress": "onboarding@company.com"
              }
            },
            {
              "name": "Create Premium Account",
              "nodeType": "step",
              "a2aPool": [
                "account-manager-v1",
                "account-manager-v2",
                "account-manager-fallback"
              ],
              "stepConfig": {
                "maxRetries": 5,
                "onError": "retry",
                "backoffBaseSeconds": 1.0,
                "backoffMaxSeconds": 60.0
              },
              "config": {
                "accountType": "premium",
                "features": [
                  "sso",
                  "api_access",
                  "priority_support"
                ]
              }
            },
            {
              "name": "Notify Sales Team",
              "nodeType": "step",
              "executorKey": "mcp-slack-notifier",
              "config": {
                "channel": "#sales-enterprise",
                "messageTemplate": "New enterprise customer: {{customerName}}"
              }
            }
          ]
        }
      ],
      "falseSteps": [
        {
          "name": "Standard Onboarding",
          "nodeType": "step",
          "executorKey": "a2a-standard-onboarding-agent",
          "config": {
            "accountType": "standard",
            "trialDays": 14
          }
        }
      ]
    },
    {
      "name": "Send Onboarding Complete Email",
      "nodeType": "step",
      "executorKey": "mcp-email-sender",
      "config": {
        "template": "onboarding_complete",
        "includeLoginLink": true
      }
    }
  ]
}
"""
)

UPDATE_EXAMPLE: dict[str, Any] = json.loads(
    r"""
{
  "name": "Customer Onboarding Workflow v2",
  "description": "Updated workflow with phone verification and improved enterprise features",
  "canvas": {
    "viewport": {
      "x": -120,
      "y": 40,
      "zoom": 0.8
    }
  },
  "nodes": [
    {
      "name": "Validate Customer Email",
      "nodeType": "step",
      "position": {
        "x": 80,
        "y": 220
      },
      "executorKey": "mcp-email-validator",
      "config": {
        "validationRules": [
          "format",
          "domain",
          "mx_record",
          "disposable_check"
        ],
        "allowedDomains": [
          "company.com",
          "partner.com",
          "newpartner.com"
        ]
      }
    },
    {
      "name": "Verify Phone Number",
      "nodeType": "step",
      "executorKey": "mcp-phone-verifier",
      "config": {
        "countryCode": "US",
        "sendVerificationSMS": true,
        "timeout": 300
      }
    },
    {
      "name": "Route by Customer Type",
      "nodeType": "router",
      "conditionCel": "input.customerType",
      "choices": [
        {
          "name": "enterprise",
          "steps": [
            {
              "name": "Enterprise Onboarding",
              "nodeType": "parallel",
              "children": [
                {
                  "name": "Send Enterprise Welcome Email",
                  "nodeType": "step",
                  "executorKey": "mcp-email-sender",
                  "config": {
                    "template": "enterprise_welcome_v2",
                    "fromAddress": "onboarding@company.com",
                    "cc": [
                      "sales@company.com"
                    ]
                  }
                },
                {
                  "name": "Create Premium Account",
                  "nodeType": "step",
                  "executorKey": "a2a-account-manager",
                  "config": {
                    "accountType": "premium",
                    "features": [
                      "sso",
                      "api_access",
                      "priority_support",
                      "custom_branding"
                    ],
                    "slaLevel": "gold"
                  }
                },
                {
                  "name": "Assign Account Manager",
                  "nodeType": "step",
                  "executorKey": "mcp-crm-integration",
                  "config": {
                    "action": "assign_account_manager",
                    "tier": "enterprise"
                  }
                }
              ]
            }
          ]
        },
        {
          "name": "business",
          "steps": [
            {
              "name": "Business Onboarding",
              "nodeType": "step",
              "executorKey": "a2a-business-onboarding-agent",
              "config": {
                "accountType": "business",
                "trialDays": 30,
                "features": [
                  "api_access",
                  "priority_support"
                ]
              }
            }
          ]
        },
        {
          "name": "standard",
          "steps": [
            {
              "name": "Standard Onboarding",
              "nodeType": "step",
              "executorKey": "a2a-standard-onboarding-agent",
              "config": {
                "accountType": "standard",
                "trialDays": 14,
                "features": [
                  "basic_support"
                ]
              }
            }
          ]
        }
      ]
    },
    {
      "name": "Setup Complete Notification",
      "nodeType": "step",
      "executorKey": "mcp-email-sender",
      "config": {
        "template": "onboarding_complete_v2",
        "includeLoginLink": true,
        "includeGettingStartedGuide": true,
        "includeVideoTutorial": true
      }
    }
  ]
}
"""
)

TREE_CONDITION_EXAMPLE: dict[str, Any] = json.loads(
    r"""
{
  "name": "Tree-Shaped Workflow",
  "nodes": [
    {
      "name": "A",
      "nodeType": "step",
      "executorKey": "tool-a"
    },
    {
      "name": "B",
      "nodeType": "condition",
      "conditionCel": "input.routeToTrue == true",
      "trueSteps": [
        {
          "name": "C",
          "nodeType": "step",
          "executorKey": "tool-c"
        },
        {
          "name": "E",
          "nodeType": "step",
          "executorKey": "tool-e"
        },
        {
          "name": "G",
          "nodeType": "step",
          "executorKey": "tool-g"
        }
      ],
      "falseSteps": [
        {
          "name": "D",
          "nodeType": "step",
          "executorKey": "tool-d"
        },
        {
          "name": "F",
          "nodeType": "step",
          "executorKey": "tool-f"
        },
        {
          "name": "H",
          "nodeType": "step",
          "executorKey": "tool-h"
        }
      ]
    }
  ]
}
"""
)

TREE_ROUTER_EXAMPLE: dict[str, Any] = json.loads(
    r"""
{
  "name": "Multi-Step Router",
  "nodes": [
    {
      "name": "research-router",
      "nodeType": "router",
      "conditionCel": "input.strategy",
      "choices": [
        {
          "name": "tech",
          "steps": [
            {
              "name": "hn-research",
              "nodeType": "step",
              "executorKey": "hackernews-agent"
            },
            {
              "name": "deep-dive",
              "nodeType": "step",
              "executorKey": "analysis-agent"
            }
          ]
        },
        {
          "name": "general",
          "steps": [
            {
              "name": "web-research",
              "nodeType": "step",
              "executorKey": "web-agent"
            }
          ]
        }
      ]
    }
  ]
}
"""
)
