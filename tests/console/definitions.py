"""Workflows the console tests decide gates of (echo steps, node ids = names)."""

from __future__ import annotations

from typing import Any

from tests.builders import echo

PAYMENT_FORM = [
    {"name": "amount", "fieldType": "number", "description": "How much to pay, in the currency"},
    {"name": "currency", "fieldType": "string", "allowedValues": ["EUR", "USD"]},
    {"name": "urgent", "fieldType": "boolean", "required": False},
    {"name": "note", "fieldType": "string", "required": False},
]


def form_gate() -> list[dict[str, Any]]:
    """A step that asks for a payment form, then a step that uses it."""
    return [
        echo(
            "collect",
            {
                "requiresUserInput": True,
                "userInputMessage": "Enter the payment to make",
                "userInputSchema": PAYMENT_FORM,
                "timeoutSeconds": 3600,
                "onTimeout": "cancel",
            },
            amount="{{ user_input.amount }}",
        ),
        echo("pay", paid="{{ previous_step_content }}"),
    ]


def confirm_gate(message: str = "Ship the order?") -> list[dict[str, Any]]:
    """A step that waits for a confirmation; a rejection skips it."""
    return [
        echo("ship", {"requiresConfirmation": True, "confirmationMessage": message}, ok=True),
        echo("after"),
    ]


def review_gate() -> list[dict[str, Any]]:
    """A step whose output a person reviews (and may edit) before it goes on."""
    return [
        echo(
            "draft",
            {"requiresOutputReview": True, "outputReviewMessage": "Check the draft"},
            text="first draft",
        ),
        echo("publish", text="{{ previous_step_content.text }}"),
    ]


def route_gate(multiple: bool = False) -> list[dict[str, Any]]:
    """A router whose route a person picks; `input.kind` is the suggestion."""
    return [
        {
            "id": "route",
            "name": "route",
            "nodeType": "router",
            "conditionCel": "input.kind",
            "humanReview": {
                "requiresUserInput": True,
                "userInputMessage": "Which way?",
                "allowMultipleSelections": multiple,
            },
            "choices": [
                {"name": "express", "steps": [echo("in-express")]},
                {"name": "standard", "steps": [echo("in-standard")]},
            ],
        }
    ]
