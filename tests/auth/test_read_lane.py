"""The read lane (app/read_lane.py): a run detail or page of runs asked for again is answered
before routing, exactly as the route answers it (kept, or built afresh once something it
shows was written), and only after the route's checks, each made afresh: an answer never
outlives a revoked grant, a missing scope or a bad token.

In `jwt` mode over real HTTP; runs are written through the store, as the worker writes them.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from activities.store.base import Store
from app.auth.caller import ALL_SCOPES, READ
from tests.api.helpers import API, assert_error
from tests.store.builders import run
from tests.support.identity import OTHER_SECRET, as_user

ALICE = as_user("alice")
BOB = as_user("bob")
ONE_STEP = [{"name": "Echo", "nodeType": "step", "executorKey": "builtin:echo"}]
DETAIL = "/api/v1/workflows/{workflow_id}/runs/{run_id}"


async def _run(api: httpx.AsyncClient, store: Store) -> tuple[str, str, str]:
    """A workflow of ALICE's with one run: its id, the run's and the run detail's URL."""
    response = await api.post(
        f"{API}/workflows", json={"name": "read-lane", "nodes": ONE_STEP}, headers=ALICE
    )
    assert response.status_code == 201, response.text
    wf = str(response.json()["id"])
    run_id = (await store.insert_run(run(wf))).id
    return wf, run_id, f"{API}/workflows/{wf}/runs/{run_id}"


async def _share(api: httpx.AsyncClient, wf: str, grants: list[dict[str, object]]) -> None:
    response = await api.put(
        f"{API}/workflows/{wf}/permissions", json={"grants": grants}, headers=ALICE
    )
    assert response.status_code == 200, response.text


async def _answers(api: httpx.AsyncClient, read: str) -> dict[str, float]:
    """`trellis_read_cache_answers_total` of one read, by how each was answered."""
    text = (await api.get("/metrics")).text
    return {
        sample.labels["answer"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "trellis_read_cache_answers_total" and sample.labels["read"] == read
    }


def _shown(response: httpx.Response) -> tuple[int, bytes, dict[str, str]]:
    """What a client gets, less the date."""
    headers = {k: v for k, v in response.headers.items() if k != "date"}
    return response.status_code, response.content, headers


async def test_a_read_asked_again_is_answered_before_routing_as_the_route_answered_it(
    api: httpx.AsyncClient, store: Store
) -> None:
    wf, run_id, detail = await _run(api, store)
    for read, url in (
        ("run_detail", detail),
        ("run_list", f"{API}/workflows/{wf}/runs?perPage=5"),
    ):
        first = await api.get(url, headers=ALICE)
        assert first.status_code == 200, first.text
        assert await _answers(api, read) == {"built": 1}
        again = await api.get(url, headers=ALICE)
        assert _shown(again) == _shown(first)
        assert await _answers(api, read) == {"built": 1, "kept_before_routing": 1}
        # Its ETag is honoured there too; HEAD is the GET without its body.
        etag = first.headers["etag"]
        unchanged = await api.get(url, headers={**ALICE, "If-None-Match": etag})
        assert unchanged.status_code == 304 and unchanged.headers["etag"] == etag
        head = await api.head(url, headers=ALICE)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == first.headers["content-length"]
        assert await _answers(api, read) == {"built": 1, "kept_before_routing": 3}

    # Answered before routing, still labelled by the route's template (never by its ids).
    text = (await api.get("/metrics")).text
    counts = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "trellis_http_request_duration_seconds_count"
        and s.labels["route"] == DETAIL
        and s.labels["method"] == "GET"
    ]
    assert sum(counts) == 3 and run_id not in text


async def test_another_query_or_a_write_is_read_afresh(
    api: httpx.AsyncClient, store: Store
) -> None:
    wf, run_id, url = await _run(api, store)
    assert (await api.get(url, headers=ALICE)).json()["status"] == "pending"
    summary = await api.get(f"{url}?nodeRuns=summary", headers=ALICE)
    assert summary.status_code == 200 and "nodeRunSummary" in summary.json()
    await store.update_run(run_id, 1, {"status": "running"})
    # Written since: the lane builds it afresh, as the route does (another spelling of
    # the same query is a key of its own, so the route builds that one).
    afresh = await api.get(url, headers=ALICE)
    routed = await api.get(f"{url}?nodeRuns=all", headers=ALICE)
    assert afresh.json()["status"] == "running"
    assert afresh.content == routed.content and afresh.headers["etag"] == routed.headers["etag"]
    assert await _answers(api, "run_detail") == {"built": 3, "built_before_routing": 1}
    # Then kept again, at the new count.
    assert _shown(await api.get(url, headers=ALICE)) == _shown(afresh)
    assert await _answers(api, "run_detail") == {
        "built": 3,
        "built_before_routing": 1,
        "kept_before_routing": 1,
    }
    # A page of runs the same way.
    page = f"{API}/workflows/{wf}/runs"
    assert (await api.get(page, headers=ALICE)).json()["runs"][0]["status"] == "running"
    await store.update_run(run_id, 2, {"status": "completed"})
    assert (await api.get(page, headers=ALICE)).json()["runs"][0]["status"] == "completed"
    assert await _answers(api, "run_list") == {"built": 1, "built_before_routing": 1}


async def test_after_a_write_the_route_checks_come_before_anything_is_built(
    api: httpx.AsyncClient, store: Store
) -> None:
    wf, run_id, url = await _run(api, store)
    await _share(api, wf, [{"principal": "user:bob", "permissions": ["VIEW"]}])
    assert (await api.get(url, headers=BOB)).status_code == 200
    await _share(api, wf, [])
    await store.update_run(run_id, 1, {"status": "running"})
    assert_error(await api.get(url, headers=BOB), 404, "resource_not_found", wf)
    no_read = as_user("alice", [s for s in ALL_SCOPES if s != READ])
    assert_error(await api.get(url, headers=no_read), 403, "forbidden", READ)
    assert_error(await api.get(url), 401, "authentication_required")
    assert await _answers(api, "run_detail") == {"built": 1}
    # A run no longer under the workflow its URL names is the route's 404 (its build
    # raises; the route then finds nothing either).
    assert await store.update_run(run_id, 2, {"workflow_definition_id": "wf-elsewhere"})
    assert_error(await api.get(url, headers=ALICE), 404, "resource_not_found", run_id)
    assert await _answers(api, "run_detail") == {"built": 1}


async def test_a_revoked_grant_is_404_at_once_though_an_answer_is_kept(
    api: httpx.AsyncClient, store: Store
) -> None:
    wf, _, url = await _run(api, store)
    await _share(api, wf, [{"principal": "user:bob", "permissions": ["VIEW"]}])
    assert (await api.get(url, headers=BOB)).status_code == 200
    assert (await api.get(url, headers=BOB)).status_code == 200
    assert await _answers(api, "run_detail") == {"built": 1, "kept_before_routing": 1}

    await _share(api, wf, [])
    assert_error(await api.get(url, headers=BOB), 404, "resource_not_found", wf)
    # The owner still reads the kept answer; nothing was written to the run.
    assert (await api.get(url, headers=ALICE)).status_code == 200
    assert await _answers(api, "run_detail") == {"built": 1, "kept_before_routing": 2}


async def test_a_kept_answer_is_refused_without_the_scope_or_a_valid_token(
    api: httpx.AsyncClient, store: Store
) -> None:
    _, _, url = await _run(api, store)
    assert (await api.get(url, headers=ALICE)).status_code == 200
    no_read = as_user("alice", [s for s in ALL_SCOPES if s != READ])
    assert_error(await api.get(url, headers=no_read), 403, "forbidden", READ)
    assert_error(await api.get(url), 401, "authentication_required")
    expired = as_user("alice", expires_in=-60)
    assert_error(await api.get(url, headers=expired), 401, "authentication_required")
    forged = as_user("alice", key=OTHER_SECRET)
    assert_error(await api.get(url, headers=forged), 401, "authentication_required")
    assert await _answers(api, "run_detail") == {"built": 1}


async def test_a_kept_answer_is_gone_with_its_workflow(
    api: httpx.AsyncClient, store: Store
) -> None:
    wf, _, url = await _run(api, store)
    assert (await api.get(url, headers=ALICE)).status_code == 200
    assert (await api.delete(f"{API}/workflows/{wf}", headers=ALICE)).status_code == 204
    assert_error(await api.get(url, headers=ALICE), 404, "resource_not_found", wf)
    assert await _answers(api, "run_detail") == {"built": 1}
