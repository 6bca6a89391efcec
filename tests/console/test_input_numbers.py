"""Number fields of a user-input form take what JSON writes as a number, as the server does."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.builders import condition, echo
from tests.console.console import Console
from tests.console.definitions import form_gate
from tests.console.test_inbox import approve_requests
from tests.hitl.helpers import wait_for_gate

# What JS Number() reads as a number but JSON (and so the server) does not.
NOT_JSON_NUMBERS = ["0x10", "Infinity", "+5", ".5", "5.", "1e400", "0b11", "1 2"]

READ_FIELD = """async ([fieldType, text]) => {
  const { inputFields } = await import("/console/assets/inputform.js");
  const form = inputFields([{ name: "n", fieldType }]);
  form.element.querySelector("input").value = text;
  const { values, errors } = form.read();
  return errors.length ? errors[0].error : { sent: JSON.stringify(values.n) };
}"""


async def test_a_number_field_refuses_what_json_does_not_write_as_a_number(
    console: Console,
) -> None:
    p = console.platform
    wf = await p.create({"nodes": form_gate()})
    run_id = await p.trigger(wf)
    await wait_for_gate(p, wf, run_id, "collect")
    page = console.page
    sent = approve_requests(page)
    await console.goto("/console/approvals")
    card = page.locator(f'article[data-run-id="{run_id}"]')
    amount = card.get_by_label("amount")
    await card.get_by_label("currency").select_option(label="EUR")

    for text in NOT_JSON_NUMBERS:
        await amount.fill(text)
        await card.get_by_role("button", name="Submit").click()
        error = card.locator("[data-field=amount] .field-error")
        await expect(error, f"{text!r} was taken").to_have_text("amount must be a number")
        await expect(amount).to_have_attribute("aria-invalid", "true")
        await expect(amount).to_be_focused()
    assert sent == [], "a refused number must not reach the server"

    await amount.fill("1e3")  # a JSON number: the server reads 1000.0
    await card.get_by_role("button", name="Submit").click()
    await expect(card.get_by_role("status")).to_contain_text("Submitted: collect")
    run = await p.wait(wf, run_id)
    assert run["resolvedRequirements"][0]["userInput"]["amount"] == 1000


async def test_an_int_field_takes_integers_only(console: Console) -> None:
    # The server's runtime schema names agno's types: "int" fields take a JSON integer.
    page = console.page
    await console.goto("/console/approvals")
    assert await page.evaluate(READ_FIELD, ["int", "-12"]) == {"sent": "-12"}
    for text in ["12.0", "1e3", "0x10", "+12", "9007199254740993"]:
        assert await page.evaluate(READ_FIELD, ["int", text]) == "n must be an integer", text
    # Spaces around a number are JSON's whitespace (a pasted value often has them).
    assert await page.evaluate(READ_FIELD, ["int", " 12 "]) == {"sent": "12"}
    # A float field sends the number as typed: 12.0 stays a float for the server.
    typed = {"\t-1.5 ": "-1.5", "-0.5e-2": "-0.5e-2", "12.0": "12.0", "1e20": "1e20"}
    for text, sent in typed.items():
        assert await page.evaluate(READ_FIELD, ["float", text]) == {"sent": sent}, text


def amount_then_cel() -> list[dict[str, Any]]:
    """A number field, then a CEL comparison with a double on what was entered."""
    form = {
        "requiresUserInput": True,
        "userInputSchema": [{"name": "amount", "fieldType": "number"}],
    }
    return [
        echo("collect", form, amount="{{ user_input.amount }}"),
        condition("large", "previous_step_content.config.amount > 10.5", echo("flag")),
    ]


async def test_a_number_field_sends_the_number_as_typed(console: Console) -> None:
    # "12.0" went as the integer 12 (CEL then failed: no matching overload for int > double)
    # and "1e20" as 100000000000000000000 ("integer outside CEL's 64-bit range"); sent
    # through the API as typed, both are floats and the run completes.
    p = console.platform
    for typed, value in [("12.0", 12.0), (" 1e20 ", 1e20)]:
        wf, run_id = await console.at_gate(amount_then_cel(), "collect")
        await console.goto("/console/approvals")
        card = console.page.locator(f'article[data-run-id="{run_id}"]')
        await card.get_by_label("amount").fill(typed)
        await card.get_by_role("button", name="Submit").click()
        await expect(card.get_by_role("status")).to_contain_text("Submitted: collect")
        run = await p.wait(wf, run_id)
        assert run["status"] == "completed", (typed, run["errorSummary"])
        sent = run["resolvedRequirements"][0]["userInput"]["amount"]
        assert isinstance(sent, float) and sent == value, typed
        assert "flag" in [n["nodeName"] for n in run["nodeRuns"]], typed


async def test_an_optional_yes_no_field_can_be_left_unanswered_again(console: Console) -> None:
    # Once Yes or No was clicked, an optional boolean could not be cleared.
    p = console.platform
    wf, run_id = await console.at_gate(form_gate(), "collect")
    await console.goto("/console/approvals")
    card = console.page.locator(f'article[data-run-id="{run_id}"]')
    urgent = card.get_by_role("group", name="urgent (optional)")
    await expect(urgent.get_by_role("radio", name="No answer")).to_be_checked()
    await card.get_by_label("amount").fill("12")
    await card.get_by_label("currency").select_option(label="EUR")
    await urgent.get_by_role("radio", name="Yes").check()
    await urgent.get_by_role("radio", name="No answer").check()
    await card.get_by_role("button", name="Submit").click()
    await expect(card.get_by_role("status")).to_contain_text("Submitted: collect")
    run = await p.wait(wf, run_id)
    assert "urgent" not in run["resolvedRequirements"][0]["userInput"]
    # A required one has Yes and No only.
    radios = await console.page.evaluate("""async () => {
      const { inputFields } = await import("/console/assets/inputform.js");
      const form = inputFields([{ name: "b", fieldType: "bool", required: true }]);
      return [...form.element.querySelectorAll("label")].map((label) => label.textContent);
    }""")
    assert radios == ["Yes", "No"]
