"""In `jwt` mode a run the store deleted answers the 404 of an id that never existed, to
its workflow's owner too: the store's trace of a deleted run names no workflow, so no ACL
says who may learn it existed (docs/security.md, "No VIEW is 404")."""

from __future__ import annotations

from tests.builders import echo
from tests.engine.test_keys_after_retention import ended_and_deleted, runs_url
from tests.support.identity import as_user
from tests.support.platform import Platform


async def test_a_deleted_run_answers_as_one_never_stored_to_every_token(
    jwt_platform: Platform,
) -> None:
    wf = await jwt_platform.create({"nodes": [echo("a")]})
    run_id = await jwt_platform.trigger(wf)
    await ended_and_deleted(jwt_platform, wf, run_id)
    by_id = f"/api/v1/runs/{run_id}"
    for path, headers, said in (
        (by_id, {}, f"Run {run_id!r} not found"),  # the owner
        (by_id, as_user("mallory"), f"Run {run_id!r} not found"),
        (runs_url(wf, run_id), {}, f"Run {run_id!r} not found for workflow {wf!r}"),
    ):
        answer = await jwt_platform.api.get(path, headers=headers)
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["message"] == said
