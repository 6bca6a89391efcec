"""The one error body: unknown routes, wrong methods, malformed JSON, size limit, store failure."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from activities.store.base import Store
from tests.api.helpers import API, assert_error
from tests.builders import step, workflow

LIMIT = 64_000  # the tests' settings.max_body_bytes


async def _count(client: httpx.AsyncClient) -> int:
    return (await client.get(f"{API}/workflows")).json()["pagination"]["total"]  # type: ignore[no-any-return]


def _big_body(size: int) -> bytes:
    body = workflow("big", step("A", config={"blob": "x" * size}))
    return json.dumps(body).encode()


class TestErrorShape:
    async def test_unknown_route_is_404_resource_not_found(self, client: httpx.AsyncClient) -> None:
        assert_error(
            await client.get(f"{API}/nothing-here"), 404, "resource_not_found", "/nothing-here"
        )

    async def test_a_trailing_slash_is_404_not_a_redirect(self, client: httpx.AsyncClient) -> None:
        # Starlette's redirect_slashes answered 307 before authentication, with the
        # request's Host echoed into Location.
        for path in (f"{API}/workflows/", f"{API}/workflows/w-1/", f"{API}/runs/r-1/events/"):
            response = await client.get(path, follow_redirects=False)
            assert_error(response, 404, "resource_not_found", path)
            assert "location" not in response.headers

    async def test_a_write_to_a_trailing_slash_is_404_and_changes_nothing(
        self, client: httpx.AsyncClient
    ) -> None:
        response = await client.post(
            f"{API}/workflows/", json=workflow("w", step("A")), follow_redirects=False
        )
        assert_error(response, 404, "resource_not_found", f"{API}/workflows/")
        assert await _count(client) == 0

    async def test_wrong_method_is_405(self, client: httpx.AsyncClient) -> None:
        response = await client.patch(f"{API}/workflows")
        assert_error(response, 405, "method_not_allowed", "PATCH")

    async def test_malformed_json_is_400_invalid_request(self, client: httpx.AsyncClient) -> None:
        response = await client.post(
            f"{API}/workflows",
            content=b'{"name": "w", "nodes": [',
            headers={"content-type": "application/json"},
        )
        assert_error(response, 400, "invalid_request", "Malformed JSON body at position")
        assert await _count(client) == 0

    async def test_wrong_type_names_the_field_path(self, client: httpx.AsyncClient) -> None:
        body = workflow("w", step("A", stepConfig={"maxRetries": "many"}))
        response = await client.post(f"{API}/workflows", json=body)
        assert_error(response, 400, "invalid_request", "nodes[0].stepConfig.maxRetries")
        assert response.json()["error"]["details"][0]["path"] == "nodes[0].stepConfig.maxRetries"

    async def test_a_json_body_sent_without_a_json_content_type_is_400_saying_so(
        self, client: httpx.AsyncClient
    ) -> None:
        # curl -d sends application/x-www-form-urlencoded unless told otherwise.
        wf = (await client.post(f"{API}/workflows", json=workflow("typed"))).json()["id"]
        for sent, as_ in (
            ({"content-type": "application/x-www-form-urlencoded"},
             "as application/x-www-form-urlencoded"),
            ({"content-type": "text/plain"}, "as text/plain"),
            ({}, "without a Content-Type"),
        ):  # fmt: skip
            response = await client.post(
                f"{API}/workflows/{wf}/toggle", content=b'{"enabled": true}', headers=sent
            )
            assert_error(
                response,
                400,
                "invalid_request",
                f"body: must be JSON sent with Content-Type: application/json (it was sent {as_})",
            )
            assert response.json()["error"]["details"][0]["path"] == "body"
        assert (await client.get(f"{API}/workflows/{wf}")).json()["enabled"] is False

    async def test_missing_body_is_400(self, client: httpx.AsyncClient) -> None:
        assert_error(await client.post(f"{API}/workflows"), 400, "invalid_request", "body")

    async def test_store_failure_is_500_database_error(
        self, client: httpx.AsyncClient, store: Store
    ) -> None:
        await store.close()
        response = await client.get(f"{API}/workflows")
        assert_error(response, 500, "database_error", "Database operation failed")

    async def test_after_an_unexpected_500_the_next_request_is_answered(
        self, client: httpx.AsyncClient, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        async def broken(*_: object, **__: object) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(store, "list_workflows", broken)
        response = await client.get(f"{API}/workflows")
        assert_error(response, 500, "internal_error", "Internal server error")
        # The server drops the connection after an unhandled error; it says so, or the
        # client's next request on the kept-alive connection was reset.
        assert response.headers["connection"] == "close"
        monkeypatch.undo()
        assert (await client.get(f"{API}/workflows")).status_code == 200


class TestBodyLimit:
    async def test_declared_length_over_the_limit_is_413(self, client: httpx.AsyncClient) -> None:
        response = await client.post(
            f"{API}/workflows",
            content=_big_body(LIMIT),
            headers={"content-type": "application/json"},
        )
        assert_error(response, 413, "payload_too_large", str(LIMIT))
        assert await _count(client) == 0

    async def test_chunked_body_over_the_limit_is_413(self, client: httpx.AsyncClient) -> None:
        data = _big_body(LIMIT)

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(data), 8_192):
                yield data[start : start + 8_192]

        response = await client.post(
            f"{API}/workflows", content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in response.request.headers
        assert_error(response, 413, "payload_too_large", str(LIMIT))
        assert await _count(client) == 0

    async def test_body_under_the_limit_is_accepted(self, client: httpx.AsyncClient) -> None:
        response = await client.post(
            f"{API}/workflows",
            content=_big_body(LIMIT - 1_000),
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 201, response.text


class TestDeepBodies:
    async def test_very_deep_node_tree_is_400_not_500(self, client: httpx.AsyncClient) -> None:
        inner: dict[str, object] = step("leaf")
        for level in range(300):
            inner = {"name": f"l{level}", "nodeType": "loop", "loopConfig": {"maxIterations": 1},
                     "children": [inner]}  # fmt: skip
        response = await client.post(f"{API}/workflows", json=workflow("deep", inner))
        assert_error(response, 400, "invalid_request")
        assert await _count(client) == 0

    async def test_pathologically_nested_json_is_400_not_500(
        self, client: httpx.AsyncClient
    ) -> None:
        response = await client.post(
            f"{API}/workflows",
            content=b'{"name": "x", "nodes": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
            headers={"content-type": "application/json"},
        )
        assert_error(response, 400, "invalid_request", "Malformed JSON body", "nested too deeply")
        assert response.json()["error"]["details"][0]["path"] == "body"
        assert await _count(client) == 0

    async def test_an_integer_of_too_many_digits_is_a_malformed_json_400(
        self, client: httpx.AsyncClient
    ) -> None:
        # Python refuses to parse an integer of more than 4,300 digits (CVE-2020-10735);
        # FastAPI answered that with a bare "There was an error parsing the body".
        body = b'{"name": "x", "nodes": [], "description": ' + b"9" * 5_000 + b"}"
        response = await client.post(
            f"{API}/workflows", content=body, headers={"content-type": "application/json"}
        )
        assert_error(response, 400, "invalid_request", "Malformed JSON body", "4300 digits")
        assert response.json()["error"]["details"][0]["path"] == "body"
        assert await _count(client) == 0

    async def test_a_body_that_is_not_utf8_is_a_malformed_json_400_at_its_position(
        self, client: httpx.AsyncClient
    ) -> None:
        response = await client.post(
            f"{API}/workflows",
            content=b'{"name": "\xff"}',
            headers={"content-type": "application/json"},
        )
        assert_error(response, 400, "invalid_request", "Malformed JSON body at position 10")
        assert await _count(client) == 0


class TestValidatorMessages:
    async def test_a_validators_message_is_given_without_pydantics_prefix(
        self, client: httpx.AsyncClient
    ) -> None:
        # pydantic words a validator's ValueError "Value error, <message>"; the API's 400
        # gives the message alone, in `message` and in `details`.
        wf = (await client.post(f"{API}/workflows", json=workflow("prefixed"))).json()["id"]
        for response, path, says in (
            (await client.get(f"{API}/workflows/{wf}/versions/abc"), "version",
             "must be an integer"),
            (await client.get(f"{API}/workflows", params={"page": "1.0"}), "page",
             "must be an integer"),
            (await client.post(f"{API}/workflows/{wf}/runs",
                               json={"resolvedDependencies": [{"nodeId": "a",
                                                               "resolution": "rerun"}]}),
             "body", "resolvedDependencies requires parentRunId"),
            (await client.post(f"{API}/workflows/{wf}/schedules", json={"cron": "61 * * * *"}),
             "cron", "'61 * * * *' is not a cron expression"),
            (await client.put(f"{API}/workflows/{wf}", json={"name": None}), "name",
             "must not be null"),
        ):  # fmt: skip
            assert_error(response, 400, "invalid_request", f"{path}: {says}")
            assert "Value error" not in response.text, response.text
            detail = response.json()["error"]["details"][0]
            assert (detail["path"], detail["message"][: len(says)]) == (path, says)
