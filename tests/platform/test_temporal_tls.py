"""TLS to a Temporal cluster: a CA file, a client certificate (mTLS) and a server name, through
a real TLS terminator in front of the session's dev server, driven by `trellis setup`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.platform.conftest import run_trellis, trellis_env
from tests.support.tls_proxy import Pki, make_pki, tls_proxy

SERVER_NAME = "temporal.trellis.test"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), ["127.0.0.1", SERVER_NAME])


@pytest.fixture
def upstream(temporal_env: WorkflowEnvironment) -> str:
    return temporal_env.client.service_client.config.target_host


@pytest.fixture
def tls_address(pki: Pki, upstream: str) -> Iterator[str]:
    with tls_proxy(pki, upstream) as address:
        yield address


@pytest.fixture
def mtls_address(pki: Pki, upstream: str) -> Iterator[str]:
    with tls_proxy(pki, upstream, require_client_cert=True) as address:
        yield address


def _setup(tmp_path: Path, address: str, *flags: str, **variables: str) -> tuple[int, list[str]]:
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_ADDRESS=address, **variables)
    result = run_trellis(["setup", "--wait", "0", *flags], env, timeout=60)
    return result.returncode, result.stderr.splitlines()


def test_setup_reaches_a_tls_cluster_with_its_ca_file(
    tmp_path: Path, pki: Pki, tls_address: str
) -> None:
    code, err = _setup(tmp_path, tls_address, "--temporal-tls-ca-file", str(pki.ca))
    assert code == 0, err


def test_without_the_ca_file_the_unknown_issuer_is_one_line_saying_which_setting(
    tmp_path: Path, tls_address: str
) -> None:
    code, err = _setup(tmp_path, tls_address, "--temporal-tls")
    assert code == 1
    (line,) = [line for line in err if line.startswith("trellis setup:")]
    assert line.startswith(f"trellis setup: cannot reach Temporal at {tls_address}: ")
    assert "UnknownIssuer" in line
    assert line.endswith(
        "the server's certificate is signed by a CA this process does not trust: "
        "set --temporal-tls-ca-file / TRELLIS_TEMPORAL_TLS_CA_FILE"
    )


def test_a_server_name_the_certificate_carries_is_checked_instead_of_the_address(
    tmp_path: Path, pki: Pki, tls_address: str
) -> None:
    wrong = tls_address.replace("127.0.0.1", "localhost")  # not in the certificate
    code, err = _setup(tmp_path, wrong, "--temporal-tls-ca-file", str(pki.ca))
    assert code == 1 and "NotValidForName" in err[-1], err
    code, err = _setup(
        tmp_path, wrong, "--temporal-tls-ca-file", str(pki.ca),
        "--temporal-tls-server-name", SERVER_NAME,
    )  # fmt: skip
    assert code == 0, err


def test_mtls_needs_the_client_certificate(tmp_path: Path, pki: Pki, mtls_address: str) -> None:
    code, err = _setup(tmp_path, mtls_address, "--temporal-tls-ca-file", str(pki.ca))
    assert code == 1
    assert err[-1].startswith(f"trellis setup: cannot reach Temporal at {mtls_address}: ")
    code, err = _setup(
        tmp_path, mtls_address, "--temporal-tls-ca-file", str(pki.ca),
        TRELLIS_TEMPORAL_TLS_CERT_FILE=str(pki.client_cert),
        TRELLIS_TEMPORAL_TLS_KEY_FILE=str(pki.client_key),
    )  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--temporal-tls-ca-file", "{missing}"], "cannot read {missing} "
         "(--temporal-tls-ca-file / TRELLIS_TEMPORAL_TLS_CA_FILE): No such file or directory"),
        (["--temporal-tls-ca-file", "{key}"], "{key} (--temporal-tls-ca-file / "
         "TRELLIS_TEMPORAL_TLS_CA_FILE) holds no PEM certificate"),
        (["--temporal-tls-cert-file", "{cert}"], "--temporal-tls-cert-file / "
         "TRELLIS_TEMPORAL_TLS_CERT_FILE needs --temporal-tls-key-file / "
         "TRELLIS_TEMPORAL_TLS_KEY_FILE (a client certificate and its key)"),
        (["--no-temporal-tls", "--temporal-tls-ca-file", "{ca}"], "TLS is turned off "
         "(--temporal-tls / TRELLIS_TEMPORAL_TLS false) but --temporal-tls-ca-file / "
         "TRELLIS_TEMPORAL_TLS_CA_FILE is set; drop one of them"),
    ],
)  # fmt: skip
def test_tls_settings_that_cannot_work_are_one_line_before_any_connect(
    tmp_path: Path, pki: Pki, flags: list[str], line: str
) -> None:
    names = {
        "missing": str(tmp_path / "nope.pem"),
        "key": str(pki.client_key),
        "cert": str(pki.client_cert),
        "ca": str(pki.ca),
    }
    code, err = _setup(tmp_path, "127.0.0.1:1", *[f.format(**names) for f in flags])
    assert code == 1
    assert err == [f"trellis setup: {line.format(**names)}"]


@pytest.mark.parametrize(
    ("variables", "what"),
    [
        ({"TRELLIS_TEMPORAL_TLS": "true"}, "--temporal-tls / TRELLIS_TEMPORAL_TLS"),
        ({"TRELLIS_TEMPORAL_TLS_SERVER_NAME": "x"},
         "--temporal-tls-server-name / TRELLIS_TEMPORAL_TLS_SERVER_NAME"),
        ({"TRELLIS_TEMPORAL_API_KEY": "k"}, "TRELLIS_TEMPORAL_API_KEY (it turns TLS on)"),
    ],
)  # fmt: skip
def test_dev_with_its_embedded_server_refuses_tls_at_once(
    tmp_path: Path, variables: dict[str, str], what: str
) -> None:
    # It waited out the start-up timeout, then failed on the handshake.
    env = trellis_env(tmp_path / "data", **variables)
    result = run_trellis(["dev", "--startup-timeout", "60"], env, timeout=20)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"trellis dev: {what} is for an external cluster (--temporal-address / "
        "TRELLIS_TEMPORAL_ADDRESS); the embedded Temporal dev server speaks no TLS"
    ]
