"""The service-token signer: what it vouches for, how long, with which key; settings that
cannot sign are refused naming the setting, and the key never shows in a repr."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from activities.executors.service_token import Caller, ServiceTokenError, ServiceTokenSigner
from app.outbound import service_token_signer
from app.settings import Settings
from temporal_workflows.contracts import Identity

SECRET = "0123456789abcdef0123456789abcdef"
CALLER = Caller(Identity(user_id="alice", scopes=["a", "b"]), "run-1", "wf-1", "n1", "nr-1", 1)


def ec_key_pem() -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def test_an_hmac_token_verifies_with_the_secret() -> None:
    token = ServiceTokenSigner(key=SECRET, issuer="trellis-prod").mint(CALLER)
    claims = jwt.decode(token, SECRET, algorithms=["HS256"], issuer="trellis-prod")
    assert claims["sub"] == "alice" and claims["scope"] == "a b" and "aud" not in claims


def test_an_es256_token_verifies_with_the_public_key_and_names_its_key_id() -> None:
    private, public = ec_key_pem()
    signer = ServiceTokenSigner(key=private, algorithm="ES256", key_id="2026-11", audience="mcp")
    token = signer.mint(CALLER)
    assert jwt.get_unverified_header(token)["kid"] == "2026-11"
    assert jwt.decode(token, public, algorithms=["ES256"], audience="mcp")["sub"] == "alice"


@pytest.mark.parametrize("algorithm", ["PS256", "PS384", "PS512"])
def test_every_pss_algorithm_the_readme_names_signs(algorithm: str) -> None:
    # "PS*" was documented; only PS256 was accepted.
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    token = ServiceTokenSigner(key=private, algorithm=algorithm).mint(CALLER)
    assert jwt.get_unverified_header(token)["alg"] == algorithm
    assert jwt.decode(token, key.public_key(), algorithms=[algorithm])["sub"] == "alice"


def test_another_header_carries_the_bare_token() -> None:
    name, value = ServiceTokenSigner(key=SECRET, header="X-User-Token").header_for(CALLER)
    assert name == "X-User-Token" and not value.startswith("Bearer ")
    assert jwt.decode(value, SECRET, algorithms=["HS256"])["sub"] == "alice"


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"key": "short"}, "TRELLIS_SERVICE_TOKEN_KEY must be at least 32 bytes for HS256"),
        ({"key": SECRET, "algorithm": "none"}, "TRELLIS_SERVICE_TOKEN_ALGORITHM 'none' is not"),
        ({"key": SECRET, "algorithm": "RS256"}, "TRELLIS_SERVICE_TOKEN_KEY cannot sign RS256"),
    ],
)
def test_keys_that_cannot_sign_are_refused_naming_the_setting(
    kwargs: dict[str, str], problem: str
) -> None:
    with pytest.raises(ServiceTokenError) as info:
        ServiceTokenSigner(**kwargs)  # type: ignore[arg-type]
    assert problem in str(info.value)
    assert SECRET not in str(info.value)


def test_the_key_is_in_no_repr() -> None:
    settings = Settings(service_token_key=SECRET)  # type: ignore[arg-type]
    assert SECRET not in repr(settings)
    assert SECRET not in repr(service_token_signer(settings))


class TestFromSettings:
    def test_no_key_means_no_tokens(self) -> None:
        assert service_token_signer(Settings()) is None

    def test_the_settings_shape_the_signer(self) -> None:
        signer = service_token_signer(
            Settings(
                service_token_key=SECRET,  # type: ignore[arg-type]
                service_token_issuer="trellis-prod",
                service_token_audience="tools",
                service_token_ttl_seconds=60,
            )
        )
        assert signer is not None
        claims = jwt.decode(signer.mint(CALLER), SECRET, algorithms=["HS256"], audience="tools")
        assert (claims["iss"], claims["exp"] - claims["iat"]) == ("trellis-prod", 60)

    def test_a_key_file_is_read(self, tmp_path: Path) -> None:
        private, public = ec_key_pem()
        (tmp_path / "key.pem").write_text(private)
        signer = service_token_signer(
            Settings(service_token_key_file=tmp_path / "key.pem", service_token_algorithm="ES256")
        )
        assert signer is not None
        assert jwt.decode(signer.mint(CALLER), public, algorithms=["ES256"])["sub"] == "alice"

    def test_key_and_key_file_together_are_refused(self, tmp_path: Path) -> None:
        (tmp_path / "key").write_text(SECRET)
        settings = Settings(service_token_key=SECRET, service_token_key_file=tmp_path / "key")  # type: ignore[arg-type]
        with pytest.raises(ServiceTokenError, match="not both"):
            service_token_signer(settings)

    def test_a_missing_key_file_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(
            ServiceTokenError, match=r"TRELLIS_SERVICE_TOKEN_KEY_FILE .* cannot be read"
        ):
            service_token_signer(Settings(service_token_key_file=tmp_path / "nope.pem"))

    def test_the_lifetime_is_bounded(self) -> None:
        with pytest.raises(ValueError, match="service_token_ttl_seconds"):
            Settings(service_token_ttl_seconds=86_400)
