"""`jwt` mode: a verified bearer token on every API request; 401 saying what was wrong."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from activities.store.base import Store
from app.auth.caller import READ
from app.auth.tokens import KEY_SET_REFETCH_SECONDS
from app.settings import Settings
from tests.api.helpers import API, assert_error
from tests.support.identity import (
    AUDIENCE,
    ISSUER,
    OTHER_SECRET,
    KeySet,
    as_user,
    bearer,
    jwt_settings,
    serve_api,
    token,
)

WORKFLOWS = f"{API}/workflows"
KeysAndApi = tuple[KeySet, httpx.AsyncClient]


class TestRefused:
    async def test_two_authorization_headers_are_401_whichever_comes_first(
        self, api: httpx.AsyncClient
    ) -> None:
        # HTTPBearer read only the first: a good token first and anything after it served
        # the request, though a proxy in front may have judged it by the second.
        alice = as_user("alice")["Authorization"]
        for pair in ((alice, "Bearer not-a-jwt"), ("Bearer not-a-jwt", alice), (alice, alice)):
            for _ in range(2):  # the second read of a path may be answered by the read lane
                headers = [("Authorization", value) for value in pair]
                response = await api.get(WORKFLOWS, headers=headers)
                assert_error(response, 401, "authentication_required", "Authorization header")
                assert response.headers["www-authenticate"].startswith("Bearer")
        created = await api.post(
            WORKFLOWS,
            json={
                "name": "x",
                "nodes": [{"name": "a", "nodeType": "step", "executorKey": "builtin:echo"}],
            },
            headers=[("Authorization", alice), ("Authorization", alice)],
        )
        assert_error(created, 401, "authentication_required")
        assert (await api.get(WORKFLOWS, headers=as_user("alice"))).json()["workflows"] == []

    async def test_dev_mode_ignores_tokens_however_many(self, dev_api: httpx.AsyncClient) -> None:
        headers = [("Authorization", "Bearer a"), ("Authorization", "Bearer b")]
        assert (await dev_api.get(WORKFLOWS, headers=headers)).status_code == 200

    async def test_no_token_is_401_authentication_required(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS)
        assert_error(response, 401, "authentication_required", "Bearer")
        assert response.headers["www-authenticate"].startswith("Bearer")

    async def test_a_malformed_body_without_a_token_is_401_before_the_400(
        self, api: httpx.AsyncClient
    ) -> None:
        # FastAPI decodes a body before any dependency: this was a 400 to anyone.
        json_type = {"content-type": "application/json"}
        response = await api.post(WORKFLOWS, content=b"{bad", headers=json_type)
        assert_error(response, 401, "authentication_required", "Bearer")
        assert response.headers["www-authenticate"].startswith("Bearer")
        for bad_token in ({"Authorization": "Basic YWxpY2U6cHc="}, bearer("not-a-jwt")):
            headers = {**json_type, **bad_token}
            response = await api.post(WORKFLOWS, content=b"{bad", headers=headers)
            assert_error(response, 401, "authentication_required")
        # A token without the route's scope: 403, as for a well-formed body.
        headers = {**json_type, **as_user("alice", [READ])}
        response = await api.post(WORKFLOWS, content=b"{bad", headers=headers)
        assert_error(response, 403, "forbidden", "workflows-write")
        # With a good token, what is wrong is the body.
        headers = {**json_type, **as_user("alice")}
        response = await api.post(WORKFLOWS, content=b"{bad", headers=headers)
        assert_error(response, 400, "invalid_request", "Malformed JSON body")
        assert (await api.get(WORKFLOWS, headers=as_user("alice"))).json()["workflows"] == []

    async def test_a_body_too_deep_to_parse_without_a_token_is_401_before_the_400(
        self, api: httpx.AsyncClient
    ) -> None:
        json_type = {"content-type": "application/json"}
        deep = b'{"name": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
        response = await api.post(WORKFLOWS, content=deep, headers=json_type)
        assert_error(response, 401, "authentication_required", "Bearer")
        headers = {**json_type, **as_user("alice")}
        response = await api.post(WORKFLOWS, content=deep, headers=headers)
        assert_error(response, 400, "invalid_request", "Malformed JSON body", "nested too deeply")

    async def test_a_chunked_body_over_the_limit_without_a_token_is_401_before_the_413(
        self,
        tmp_path: Path,
        store: Store,
        builtins_catalog: Catalog,
        temporal_env: WorkflowEnvironment,
    ) -> None:
        # A body with no declared length is cut off as it streams, inside the route: that
        # 413 was answered to anyone (a declared length over the limit still is: it is
        # refused before anything is read, token or body).
        settings = jwt_settings(tmp_path, max_body_bytes=64_000)
        body = b'{"name": "' + b"x" * 70_000 + b'"}'

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 8_192):
                yield body[start : start + 8_192]

        json_type = {"content-type": "application/json"}
        async with serve_api(settings, store, builtins_catalog, temporal_env.client) as http:
            response = await http.post(WORKFLOWS, content=chunks(), headers=json_type)
            assert "content-length" not in response.request.headers
            assert_error(response, 401, "authentication_required", "Bearer")
            headers = {**json_type, **as_user("alice", [READ])}
            response = await http.post(WORKFLOWS, content=chunks(), headers=headers)
            assert_error(response, 403, "forbidden", "workflows-write")
            headers = {**json_type, **as_user("alice")}
            response = await http.post(WORKFLOWS, content=chunks(), headers=headers)
            assert_error(response, 413, "payload_too_large", "64000")
            assert (await http.get(WORKFLOWS, headers=as_user("alice"))).json()["workflows"] == []

    async def test_another_scheme_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers={"Authorization": "Basic YWxpY2U6cHc="})
        assert_error(response, 401, "authentication_required")

    async def test_malformed_token_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=bearer("not-a-jwt"))
        assert_error(response, 401, "authentication_required", "Malformed")

    async def test_expired_token_is_401_saying_expired(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", expires_in=-120))
        assert_error(response, 401, "authentication_required", "expired")

    async def test_expiry_within_the_leeway_is_accepted(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", expires_in=-10))
        assert response.status_code == 200, response.text

    async def test_token_signed_with_another_secret_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", key=OTHER_SECRET))
        assert_error(response, 401, "authentication_required", "signature")

    async def test_unsigned_token_is_401(self, api: httpx.AsyncClient) -> None:
        unsigned = token("alice", key=None, algorithm="none")
        response = await api.get(WORKFLOWS, headers=bearer(unsigned))
        assert_error(response, 401, "authentication_required", "'none' is not accepted")

    async def test_token_without_exp_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=bearer(token("alice", exp=None)))
        assert_error(response, 401, "authentication_required", "'exp'")

    # Seconds from now, made when the test runs: made at collection, an `exp` 600 s ahead
    # had passed by the time a long suite under load reached it ("Token expired").
    @pytest.mark.parametrize(("name", "offset"), [("exp", 600), ("iat", 0), ("nbf", -60)])
    async def test_a_time_claim_that_is_not_a_number_is_401(
        self, api: httpx.AsyncClient, name: str, offset: int
    ) -> None:
        times = {name: str(int(time.time()) + offset)}
        response = await api.get(WORKFLOWS, headers=bearer(token("alice", **times)))
        assert_error(response, 401, "authentication_required", f"{name!r} claim is not a number")

    async def test_token_without_sub_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=bearer(token("alice", sub=None)))
        assert_error(response, 401, "authentication_required", "'sub'")

    async def test_a_sub_no_grant_could_name_is_401(self, api: httpx.AsyncClient) -> None:
        # A newline in a sub forged a line wherever the owner was printed; a space made an
        # identity that no `user:<sub>` principal can name.
        for sub, odd in (("evil\nINFO forged", "U+000A"), ("bob ", "U+0020"), ("a\x1bb", "U+001B")):
            response = await api.get(WORKFLOWS, headers=bearer(token(sub)))
            assert_error(response, 401, "authentication_required", odd)
        created = await api.post(
            WORKFLOWS, json={"name": "by-a-forger"}, headers=bearer(token("evil\nx"))
        )
        assert_error(created, 401, "authentication_required", "'sub'")
        listed = await api.get(WORKFLOWS, headers=as_user("alice"), params={"search": "forger"})
        assert listed.json()["pagination"]["total"] == 0

    async def test_rs256_token_without_a_key_set_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=bearer(KeySet().rs256("alice")))
        assert_error(response, 401, "authentication_required", "'RS256' is not accepted")

    async def test_the_token_is_in_no_answer_and_no_log_line(
        self, api: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG)
        tokens = [
            token("alice", expires_in=-120),
            token("alice", key=OTHER_SECRET),
            token("alice"),
        ]
        for value in tokens:
            response = await api.get(WORKFLOWS, headers=bearer(value))
            signature = value.rsplit(".", 1)[1]
            assert signature not in response.text
            assert signature not in caplog.text


class TestAccepted:
    async def test_valid_token_reads(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", [READ]))
        assert response.status_code == 200, response.text

    async def test_scopes_are_separated_by_spaces_only(self, api: httpx.AsyncClient) -> None:
        # RFC 6749's separator is U+0020; a no-break space or a line separator was taken
        # for one too, so a token naming one odd scope held two.
        for odd in ("\u00a0", "\u2028", "\t"):
            sent = token("alice", scope=f"workflows-write{odd}workflows-read")
            response = await api.get(WORKFLOWS, headers=bearer(sent))
            assert_error(response, 403, "forbidden", "workflows-read")
        spaced = token("alice", scope="  workflows-write   workflows-read ")
        assert (await api.get(WORKFLOWS, headers=bearer(spaced))).status_code == 200

    async def test_probes_and_docs_stay_open(self, api: httpx.AsyncClient) -> None:
        for path in (
            "/healthz",
            "/readyz",
            "/docs",
            "/docs/static/swagger-ui-bundle.js",
            "/openapi.json",
        ):
            response = await api.get(path)
            assert response.status_code == 200, (path, response.text)

    async def test_openapi_declares_the_bearer_scheme_and_each_scope(
        self, api: httpx.AsyncClient
    ) -> None:
        doc = (await api.get("/openapi.json")).json()
        scheme = doc["components"]["securitySchemes"]["bearerAuth"]
        assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
        assert doc["paths"][WORKFLOWS]["get"]["security"] == [{"bearerAuth": [READ]}]
        assert "security" not in doc["paths"]["/healthz"]["get"]


class TestAudienceAndIssuer:
    @pytest.fixture
    def settings(self, tmp_path: Path) -> Settings:
        return jwt_settings(tmp_path, jwt_audience=AUDIENCE, jwt_issuer=ISSUER)

    async def test_matching_audience_and_issuer_are_accepted(self, api: httpx.AsyncClient) -> None:
        headers = as_user("alice", aud=AUDIENCE, iss=ISSUER)
        assert (await api.get(WORKFLOWS, headers=headers)).status_code == 200

    async def test_wrong_audience_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", aud="other", iss=ISSUER))
        assert_error(response, 401, "authentication_required", "audience")

    async def test_missing_audience_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", iss=ISSUER))
        assert_error(response, 401, "authentication_required", "'aud'")

    async def test_wrong_issuer_is_401(self, api: httpx.AsyncClient) -> None:
        response = await api.get(WORKFLOWS, headers=as_user("alice", aud=AUDIENCE, iss="x"))
        assert_error(response, 401, "authentication_required", "issuer")


class TestKeySet:
    """RS256 and ES256 tokens verified against a JWKS served by a real local HTTP server."""

    @pytest.fixture
    async def keys_and_api(
        self,
        tmp_path: Path,
        store: Store,
        builtins_catalog: Catalog,
        temporal_env: WorkflowEnvironment,
    ) -> AsyncIterator[KeysAndApi]:
        keys = KeySet()
        async with keys.served_at() as url:
            settings = jwt_settings(tmp_path, jwt_secret=None, jwt_jwks_url=url)
            async with serve_api(settings, store, builtins_catalog, temporal_env.client) as http:
                yield keys, http

    async def test_rs256_and_es256_tokens_are_verified(self, keys_and_api: KeysAndApi) -> None:
        keys, api = keys_and_api
        for signed in (keys.rs256("alice"), keys.es256("alice")):
            response = await api.get(WORKFLOWS, headers=bearer(signed))
            assert response.status_code == 200, response.text
        assert keys.served >= 1

    async def test_a_key_the_set_does_not_have_is_401(self, keys_and_api: KeysAndApi) -> None:
        keys, api = keys_and_api
        stranger = KeySet()  # same kids, other keys: the signature does not verify
        response = await api.get(WORKFLOWS, headers=bearer(stranger.rs256("alice")))
        assert_error(response, 401, "authentication_required", "signature")
        unknown_kid = token("alice", key=keys.rsa, algorithm="RS256", headers={"kid": "nope"})
        response = await api.get(WORKFLOWS, headers=bearer(unknown_kid))
        assert_error(response, 401, "authentication_required", "key set")

    async def test_a_key_rotated_in_is_accepted_within_the_refetch_bound(
        self, keys_and_api: KeysAndApi
    ) -> None:
        # PyJWT's default refused a key published after the set was fetched for 30 s (an
        # audit saw 401 until 31 s): the docs said rotated keys work at once.
        keys, api = keys_and_api
        assert (await api.get(WORKFLOWS, headers=bearer(keys.rs256("alice")))).status_code == 200
        kid = keys.rotate("rsa-2")
        rotated = token("alice", key=keys.rotated[kid], algorithm="RS256", headers={"kid": kid})
        deadline = time.monotonic() + KEY_SET_REFETCH_SECONDS + 3
        while (await api.get(WORKFLOWS, headers=bearer(rotated))).status_code != 200:
            assert time.monotonic() < deadline, "the rotated key was not fetched in time"
            await asyncio.sleep(0.25)

    async def test_an_algorithm_other_than_its_keys_is_401(self, keys_and_api: KeysAndApi) -> None:
        # The header is the caller's: an RS256 token naming the EC key (and the reverse)
        # was a 500 when PyJWT was handed a key of the wrong kind.
        keys, api = keys_and_api
        for algorithm, key, kid in (("RS256", keys.rsa, "ec-1"), ("ES256", keys.ec, "rsa-1")):
            mixed = token("alice", key=key, algorithm=algorithm, headers={"kid": kid})
            response = await api.get(WORKFLOWS, headers=bearer(mixed))
            assert_error(response, 401, "authentication_required", "does not match its key")

    async def test_expired_rs256_token_is_401_saying_expired(
        self, keys_and_api: KeysAndApi
    ) -> None:
        keys, api = keys_and_api
        response = await api.get(WORKFLOWS, headers=bearer(keys.rs256("alice", expires_in=-99)))
        assert_error(response, 401, "authentication_required", "expired")

    async def test_hs256_token_is_refused_without_a_secret(self, keys_and_api: KeysAndApi) -> None:
        # Nobody can mint an HS256 token with the public key as the secret (alg confusion).
        _, api = keys_and_api
        response = await api.get(WORKFLOWS, headers=as_user("alice"))
        assert_error(response, 401, "authentication_required", "'HS256' is not accepted")


class TestDevMode:
    async def test_dev_mode_needs_no_token_and_ignores_one(
        self, dev_api: httpx.AsyncClient
    ) -> None:
        assert (await dev_api.get(WORKFLOWS)).status_code == 200
        assert (await dev_api.get(WORKFLOWS, headers=bearer("garbage"))).status_code == 200

    async def test_dev_mode_answers_only_requests_addressed_to_this_machine(
        self, dev_api: httpx.AsyncClient
    ) -> None:
        # DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 is
        # same-origin with the dev API, and its requests carry `Host: evil.example`.
        # A loopback name followed by more than a port is another name (found by an audit).
        for host in (
            "evil.example",
            "evil.example:8000",
            "127.0.0.1.nip.io",
            "[::1]evil.com",
            "127.0.0.1:80@evil.com",
            "[::1",
        ):
            refused = await dev_api.get(WORKFLOWS, headers={"Host": host})
            assert_error(refused, 403, "forbidden", "addressed to this machine")
            posted = await dev_api.post(WORKFLOWS, json={}, headers={"Host": host})
            assert posted.status_code == 403
        for host in ("localhost:8000", "127.0.0.1", "[::1]:8000"):
            assert (await dev_api.get(WORKFLOWS, headers={"Host": host})).status_code == 200

    async def test_dev_mode_takes_changes_only_from_pages_on_this_machine(
        self, dev_api: httpx.AsyncClient
    ) -> None:
        # A form on another site posts to a loopback port with no preflight (found by an
        # audit: a body-less cancel was answered 200 "Cancellation requested").
        before = (await dev_api.get(WORKFLOWS)).json()["pagination"]["total"]
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        for origin in ("http://evil.com", "https://127.0.0.1.nip.io", "null"):
            cancel = await dev_api.post(
                f"{WORKFLOWS}/wf-x/runs/run-x/cancel", headers={**form, "Origin": origin}
            )
            assert_error(cancel, 403, "forbidden", "pages on this machine")
            made = await dev_api.post(
                WORKFLOWS, json={"name": f"from {origin}", "nodes": []}, headers={"Origin": origin}
            )
            assert made.status_code == 403
            # Reading is not a change (and without CORS no other site reads the answer).
            shown = await dev_api.get(WORKFLOWS, headers={"Origin": origin})
            assert shown.status_code == 200
        assert (await dev_api.get(WORKFLOWS)).json()["pagination"]["total"] == before
        for origin in ("http://localhost:5173", "http://127.0.0.1:8000", "http://[::1]:8000"):
            cancel = await dev_api.post(
                f"{WORKFLOWS}/wf-x/runs/run-x/cancel", headers={"Origin": origin}
            )
            assert cancel.status_code == 404, (origin, cancel.text)

    async def test_jwt_mode_serves_any_host_name(self, api: httpx.AsyncClient) -> None:
        headers = {**as_user("alice", [READ]), "Host": "trellis.example.com"}
        assert (await api.get(WORKFLOWS, headers=headers)).status_code == 200
