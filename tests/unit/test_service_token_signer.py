"""The service-token signer: what it vouches for, how long, with which key; settings that
cannot sign are refused naming the setting, and the key never shows in a repr."""

from __future__ import annotations

import os
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from activities.executors.service_token import Caller, ServiceTokenError, ServiceTokenSigner
from app.cli.main import main
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


def rsa_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


class TestKeysThatDoNotFit:
    def test_an_empty_key_file_is_refused_naming_it(self, tmp_path: Path) -> None:
        # It turned service tokens off without a word.
        path = tmp_path / "key"
        path.write_text("\n")
        with pytest.raises(ServiceTokenError) as info:
            service_token_signer(Settings(service_token_key_file=path))
        assert str(info.value) == f"TRELLIS_SERVICE_TOKEN_KEY_FILE {path} is empty"

    def test_a_short_key_from_a_file_names_the_file_not_the_key_variable(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "key"
        path.write_text("short")
        with pytest.raises(ServiceTokenError) as info:
            service_token_signer(Settings(service_token_key_file=path))
        assert str(info.value) == (
            f"the key in {path} (TRELLIS_SERVICE_TOKEN_KEY_FILE) must be at least 32 bytes "
            "for HS256"
        )

    def test_a_key_of_the_wrong_type_says_what_it_is(self) -> None:
        # It said "an asymmetric algorithm needs a PEM private key" though one was given.
        with pytest.raises(ServiceTokenError) as info:
            ServiceTokenSigner(key=rsa_key_pem(), algorithm="ES256")
        assert str(info.value).startswith(
            "TRELLIS_SERVICE_TOKEN_KEY cannot sign ES256 tokens: it is an RSA private key, "
            "which does not fit ES256 (RS*/PS*: an RSA key, "
        )

    def test_a_pem_key_for_an_hmac_algorithm_says_it_needs_a_secret(self) -> None:
        private, _ = ec_key_pem()
        with pytest.raises(ServiceTokenError) as info:
            ServiceTokenSigner(key=private, algorithm="HS256")
        assert str(info.value) == (
            "TRELLIS_SERVICE_TOKEN_KEY cannot sign HS256 tokens: it is an EC private key "
            "(secp256r1), and HS256 signs with a shared secret"
        )
        assert private not in str(info.value)

    def test_a_key_that_is_no_pem_for_an_asymmetric_algorithm_says_so(self) -> None:
        with pytest.raises(ServiceTokenError) as info:
            ServiceTokenSigner(key=SECRET, algorithm="RS256")
        assert str(info.value) == (
            "TRELLIS_SERVICE_TOKEN_KEY cannot sign RS256 tokens: it is no PEM private key "
            "(without a passphrase)"
        )


class TestAlgorithmChoice:
    @pytest.mark.parametrize(("given", "algorithm"), [("hs256", "HS256"), ("eddsa", "EdDSA")])
    def test_an_algorithm_is_taken_in_any_case(self, given: str, algorithm: str) -> None:
        # `hs256` was refused with exit 1 while other choices took any case.
        assert Settings(service_token_algorithm=given).service_token_algorithm == algorithm  # type: ignore[arg-type]

    def test_an_unknown_algorithm_is_refused_without_a_key(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        for name in [n for n in os.environ if n.upper().startswith("TRELLIS_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("TRELLIS_SERVICE_TOKEN_ALGORITHM", "foo")
        monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")  # else: stop at the store
        assert main(["worker"]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(
            "trellis worker: invalid value 'foo' for --service-token-algorithm / "
            "TRELLIS_SERVICE_TOKEN_ALGORITHM: must be 'HS256', 'HS384', 'HS512', 'RS256'"
        )
        assert line.endswith("'ES512' or 'EdDSA'")

    def test_a_bad_algorithm_flag_is_a_usage_error(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["worker", "--service-token-algorithm", "foo"]) == 2
        # One line in the settings' words, as a bad variable's (README).
        assert capsys.readouterr().err.startswith(
            "trellis worker: invalid value 'foo' for --service-token-algorithm / "
            "TRELLIS_SERVICE_TOKEN_ALGORITHM: must be 'HS256', "
        )
