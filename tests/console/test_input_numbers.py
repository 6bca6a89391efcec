"""Number fields of a user-input form take what JSON writes as a number, as the server does."""

from __future__ import annotations

from playwright.async_api import expect

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
  return errors.length ? errors[0].error : values.n;
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
    assert await page.evaluate(READ_FIELD, ["int", "-12"]) == -12
    for text in ["12.0", "1e3", "0x10", "+12", "9007199254740993"]:
        assert await page.evaluate(READ_FIELD, ["int", text]) == "n must be an integer", text
    # Spaces around a number are JSON's whitespace (a pasted value often has them).
    assert await page.evaluate(READ_FIELD, ["int", " 12 "]) == 12
    assert await page.evaluate(READ_FIELD, ["float", "\t-1.5 "]) == -1.5
    assert await page.evaluate(READ_FIELD, ["float", "-0.5e-2"]) == -0.005
