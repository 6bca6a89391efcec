"""Names that only look alike: a workflow's name is kept composed (NFC) and trimmed, so
"Café" typed another way is the same name (409); sibling names that differ only in their
Unicode form are refused as repeats. Case and width still make different names."""

from __future__ import annotations

import httpx

from tests.api.helpers import API, assert_error
from tests.builders import parallel, router, step, workflow

COMPOSED = "Caf\u00e9"
DECOMPOSED = "Cafe\u0301"


async def test_a_name_typed_in_another_unicode_form_or_with_spaces_is_the_same_name(
    client: httpx.AsyncClient,
) -> None:
    made = await client.post(f"{API}/workflows", json=workflow(DECOMPOSED))
    assert made.status_code == 201, made.text
    assert made.json()["name"] == COMPOSED
    before = (await client.get(f"{API}/workflows")).json()["pagination"]["total"]
    for same in (COMPOSED, f" {COMPOSED} ", f"{DECOMPOSED}\t"):
        refused = await client.post(f"{API}/workflows", json=workflow(same))
        assert_error(refused, 409, "duplicate_entry", COMPOSED)
    assert (await client.get(f"{API}/workflows")).json()["pagination"]["total"] == before
    for other in ("CAF\u00c9", "\uff23\uff41\uff46\u00e9"):  # case and full width: another name
        assert (await client.post(f"{API}/workflows", json=workflow(other))).status_code == 201


async def test_a_rename_to_a_spaced_name_keeps_it_trimmed_and_makes_no_version_when_equal(
    client: httpx.AsyncClient,
) -> None:
    made = (await client.post(f"{API}/workflows", json=workflow("Trimmed"))).json()
    again = await client.put(f"{API}/workflows/{made['id']}", json={"name": "  Trimmed "})
    assert again.status_code == 200, again.text
    assert (again.json()["name"], again.json()["version"]) == ("Trimmed", 1)


async def test_siblings_named_alike_in_two_unicode_forms_are_refused(
    client: httpx.AsyncClient,
) -> None:
    twins = parallel("both", step(COMPOSED), step(DECOMPOSED))
    refused = await client.post(f"{API}/workflows", json=workflow("twins", twins))
    assert_error(refused, 400, "invalid_request", "parallel children's names must be unique")
    assert "Cafe\\\\u0301" in refused.text
    routes = router("pick", "'x'", {COMPOSED: [step("a")], DECOMPOSED: [step("b")]})
    refused = await client.post(f"{API}/workflows", json=workflow("routes", routes))
    assert_error(refused, 400, "invalid_request", "router choice names must be unique")
    names = [w["name"] for w in (await client.get(f"{API}/workflows")).json()["workflows"]]
    assert "twins" not in names and "routes" not in names
