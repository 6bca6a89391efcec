"""How a verified token becomes a caller: scopes, roles and name from configurable claims."""

from __future__ import annotations

import base64
import json
import re

import pytest

from app.auth.token_rules import TokenSettingsError
from app.auth.tokens import ClaimNames, TokenVerifier
from app.errors import NotAuthenticated
from tests.support.identity import SECRET, token
from tests.support.processes import REPO


async def test_scopes_may_be_a_space_separated_string_or_a_list() -> None:
    verifier = TokenVerifier(secret=SECRET)
    as_text = await verifier.caller(token("alice", ["workflows-read", "workflows-write"]))
    as_list = await verifier.caller(token("alice", scope=["workflows-read", "workflows-write"]))
    assert as_text.scopes == as_list.scopes == {"workflows-read", "workflows-write"}


async def test_claim_names_and_dotted_paths_are_configurable() -> None:
    verifier = TokenVerifier(
        secret=SECRET,
        claims=ClaimNames(scopes="scp", roles="realm_access.roles", name="preferred_username"),
    )
    caller = await verifier.caller(
        token(
            "alice",
            scp="workflows-read",
            realm_access={"roles": ["ops", "finance"]},
            preferred_username="Alice",
        )
    )
    assert caller.scopes == {"workflows-read"}
    assert caller.principals == {"user:alice", "role:ops", "role:finance"}
    assert caller.username == "Alice" and caller.verified and not caller.admin
    identity = caller.identity()
    assert identity is not None and identity.roles == ["finance", "ops"]


async def test_a_token_without_scopes_has_none() -> None:
    caller = await TokenVerifier(secret=SECRET).caller(token("alice", scope=None))
    assert caller.scopes == frozenset()


async def test_an_empty_sub_is_refused() -> None:
    with pytest.raises(NotAuthenticated, match="'sub'"):
        await TokenVerifier(secret=SECRET).caller(token(" "))


def test_jwt_mode_needs_a_secret_or_a_key_set() -> None:
    with pytest.raises(TokenSettingsError, match="TRELLIS_JWT_SECRET"):
        TokenVerifier()
    with pytest.raises(TokenSettingsError, match="at least 32 bytes"):
        TokenVerifier(secret="short")


def test_the_env_examples_placeholder_secret_is_refused() -> None:
    # Long enough, but printed in the repository: anyone could sign tokens with it.
    example = (REPO / ".env.example").read_text()
    placeholder = example.split("TRELLIS_JWT_SECRET=", 1)[1].splitlines()[0].strip()
    assert len(placeholder.encode()) >= 32
    with pytest.raises(TokenSettingsError, match="placeholder"):
        TokenVerifier(secret=placeholder)
    with pytest.raises(TokenSettingsError, match="placeholder"):
        TokenVerifier(secret="CHANGE-ME" + "x" * 40)


def test_the_verifier_never_shows_its_secret() -> None:
    assert SECRET not in repr(TokenVerifier(secret=SECRET))


@pytest.mark.parametrize("alg", [["HS256"], {"HS256": True}, None, 256])
async def test_a_header_whose_alg_is_not_a_string_is_refused(alg: object) -> None:
    """The header is the caller's JSON: any `alg` that is not a string is a 401, never a 500."""
    signed = token("alice")
    header = base64.urlsafe_b64encode(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    forged = header.rstrip(b"=").decode() + "." + signed.split(".", 1)[1]
    with pytest.raises(NotAuthenticated, match="algorithm"):
        await TokenVerifier(secret=SECRET).caller(forged)


async def test_a_sub_no_principal_could_name_is_refused_and_the_name_is_cleaned() -> None:
    verifier = TokenVerifier(secret=SECRET)
    for sub, says in (("x" * 201, "is 201 characters long (at most 200)"),
                      ("bob\u202e", "holds a format character (U+202E)")):  # fmt: skip
        with pytest.raises(NotAuthenticated, match=re.escape(f"Token's 'sub' {says}")):
            await verifier.caller(token(sub))
    assert (await verifier.caller(token("x" * 200))).sub == "x" * 200
    # The name is shown only (a run's triggeredBy.username): cleaned and cut, not refused.
    named = await verifier.caller(token("alice", name="Ada\n\x1b[31mL\u202e" + "o" * 30_000))
    assert named.username == "Ada [31mL " + "o" * 190
    assert (await verifier.caller(token("alice", name="\n\u200b"))).username is None
    assert (await verifier.caller(token("alice", name="Zoë 財務"))).username == "Zoë 財務"
