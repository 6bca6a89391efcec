"""A run the store deleted (the run retention, or its workflow's delete) still answers 404,
but says it existed and was deleted, to the dev admin (docs/operations.md, "Run
retention"); an id that never existed answers as before."""

from __future__ import annotations

from typing import Any

from tests.builders import echo
from tests.engine.test_keys_after_retention import ended_and_deleted, runs_url
from tests.support.platform import Platform


def assert_deleted(answer: Any, run_id: str) -> None:
    assert answer.status_code == 404, answer.text
    error = answer.json()["error"]
    assert error["code"] == "resource_not_found"
    assert error["message"] == (
        f"Run {run_id!r} is no longer in the store: it ended and was deleted under run "
        "retention (TRELLIS_RUN_RETENTION_DAYS) or with its workflow"
    )


async def test_a_run_the_retention_deleted_says_so_on_every_run_path(platform: Platform) -> None:
    # It answered "Run '…' not found", as for a typo.
    wf = await platform.create({"nodes": [echo("a")]})
    run_id = await platform.trigger(wf)
    await ended_and_deleted(platform, wf, run_id)
    run = runs_url(wf, run_id)
    for path in (
        f"/api/v1/runs/{run_id}",
        run,
        f"{run}?nodeRuns=summary",
        f"{run}/nodes",
        f"{run}/graph",
        f"{run}/children",
    ):
        assert_deleted(await platform.api.get(path), run_id)
    assert_deleted(await platform.api.post(f"{run}/replay"), run_id)
    assert (await platform.api.get(runs_url(wf))).json()["runs"] == []


async def test_a_run_deleted_with_its_workflow_says_so_by_its_id(platform: Platform) -> None:
    wf = await platform.create({"nodes": [echo("a")]})
    run_id = await platform.trigger(wf)
    await platform.wait(wf, run_id)
    await platform.client.get_workflow_handle(run_id).result()
    assert (await platform.api.delete(f"/api/v1/workflows/{wf}")).status_code == 204
    assert_deleted(await platform.api.get(f"/api/v1/runs/{run_id}"), run_id)


async def test_an_id_never_stored_and_a_live_run_of_another_workflow_answer_as_before(
    platform: Platform,
) -> None:
    wf = await platform.create({"nodes": [echo("a")]})
    other = await platform.create({"nodes": [echo("b")]})
    run_id = await platform.trigger(other)
    await platform.wait(other, run_id)
    never = "run-never-stored"
    answer = await platform.api.get(f"/api/v1/runs/{never}")
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == f"Run {never!r} not found"
    answer = await platform.api.get(runs_url(wf, run_id))
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == f"Run {run_id!r} not found for workflow {wf!r}"
