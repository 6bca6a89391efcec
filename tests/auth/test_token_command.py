"""`trellis token` prints a token the API in `jwt` mode accepts; without a secret it says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import jwt
import pytest
from temporalio.testing import WorkflowEnvironment

from activities.executors.catalog import Catalog
from activities.store.base import Store
from app.auth.caller import ALL_SCOPES
from tests.api.helpers import API
from tests.support.identity import SECRET, bearer, jwt_settings, serve_api

REPO = Path(__file__).resolve().parents[2]


def trellis_token(*args: str, secret: str | None = SECRET) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRELLIS_")}
    if secret is not None:
        env["TRELLIS_JWT_SECRET"] = secret
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "token", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_prints_one_token_with_the_given_claims() -> None:
    result = trellis_token(
        "--sub", "alice", "--scopes", "workflows-read,workflows-write",
        "--roles", "ops,finance", "--name", "Alice", "--ttl", "120",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = result.stdout.strip()
    assert "\n" not in printed
    claims = jwt.decode(printed, SECRET, algorithms=["HS256"])
    assert claims["sub"] == "alice" and claims["name"] == "Alice"
    assert claims["scope"] == "workflows-read workflows-write"
    assert claims["roles"] == ["ops", "finance"]
    assert claims["exp"] - claims["iat"] == 120


def test_without_a_secret_it_exits_non_zero_saying_so() -> None:
    result = trellis_token("--sub", "alice", "--scopes", "workflows-read", secret=None)
    assert result.returncode != 0
    assert "TRELLIS_JWT_SECRET" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_sub_the_api_would_refuse_is_a_usage_error() -> None:
    result = trellis_token("--sub", "bob ", "--scopes", "workflows-read")
    assert result.returncode == 2 and result.stdout == ""
    assert "whitespace (U+0020)" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("scopes", "bad", "reason"),
    [
        ("workflows-reed", "workflows-reed", "not a scope"),
        ("workflows-read,workflows-reed", "workflows-reed", "not a scope"),
        ("workflows-read workflows-write", "workflows-read workflows-write", "not a scope"),
        ("", "", "name at least one scope"),
        (" , ", " , ", "name at least one scope"),
    ],
)
def test_a_scope_the_api_does_not_grant_is_a_usage_error_naming_it(
    scopes: str, bad: str, reason: str
) -> None:
    # A typo, or no scope, minted a token (exit 0) that every route refused with 403
    # (found by an outside audit).
    result = trellis_token("--sub", "alice", "--scopes", scopes)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.splitlines() == [
        f"trellis token: invalid value '{bad}' for --scopes: {reason}; the scopes are "
        f"{', '.join(ALL_SCOPES)} (comma-separated)"
    ]


def test_every_scope_the_api_grants_is_taken() -> None:
    result = trellis_token("--sub", "alice", "--scopes", ",".join(ALL_SCOPES))
    assert result.returncode == 0, result.stderr
    claims = jwt.decode(result.stdout.strip(), SECRET, algorithms=["HS256"])
    assert claims["scope"] == " ".join(ALL_SCOPES)


def test_a_short_secret_is_refused() -> None:
    result = trellis_token("--sub", "alice", "--scopes", "workflows-read", secret="short")
    assert result.returncode != 0 and "at least 32 bytes" in result.stderr


async def test_the_api_accepts_the_printed_token(api: httpx.AsyncClient) -> None:
    printed = trellis_token("--sub", "alice", "--scopes", "workflows-read").stdout.strip()
    response = await api.get(f"{API}/workflows", headers=bearer(printed))
    assert response.status_code == 200, response.text


async def test_a_token_for_an_api_checking_issuer_and_audience_takes_them_as_flags(
    tmp_path: Path, store: Store, builtins_catalog: Catalog, temporal_env: WorkflowEnvironment
) -> None:
    settings = jwt_settings(
        tmp_path,
        jwt_issuer="https://idp.test",
        jwt_audience="trellis-api",
        jwt_roles_claim="realm_access.roles",
    )
    flags = ["--jwt-issuer", "https://idp.test", "--jwt-audience", "trellis-api"]
    flags += ["--jwt-roles-claim", "realm_access.roles"]
    minted = trellis_token("--sub", "alice", "--scopes", "workflows-read", "--roles", "ops", *flags)
    assert minted.returncode == 0, minted.stderr
    claims = jwt.decode(minted.stdout.strip(), SECRET, algorithms=["HS256"], audience="trellis-api")
    assert claims["iss"] == "https://idp.test" and claims["realm_access"] == {"roles": ["ops"]}
    unchecked = trellis_token("--sub", "alice", "--scopes", "workflows-read").stdout.strip()
    async with serve_api(settings, store, builtins_catalog, temporal_env.client) as api:
        accepted = await api.get(f"{API}/workflows", headers=bearer(minted.stdout.strip()))
        refused = await api.get(f"{API}/workflows", headers=bearer(unchecked))
    assert accepted.status_code == 200, accepted.text
    assert refused.status_code == 401, refused.text
