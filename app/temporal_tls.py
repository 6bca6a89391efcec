"""TLS to Temporal, from settings: off, on with the system's CAs, or a `TLSConfig` built from
a CA file, a client certificate and key (mTLS) and a server name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from temporalio.service import TLSConfig

from app.settings import Settings
from app.startup_failure import StartupFailure

# Settings that each turn TLS on, with how an operator names them.
TLS_SETTINGS = {
    "temporal_tls_ca_file": "--temporal-tls-ca-file / TRELLIS_TEMPORAL_TLS_CA_FILE",
    "temporal_tls_cert_file": "--temporal-tls-cert-file / TRELLIS_TEMPORAL_TLS_CERT_FILE",
    "temporal_tls_key_file": "--temporal-tls-key-file / TRELLIS_TEMPORAL_TLS_KEY_FILE",
    "temporal_tls_server_name": "--temporal-tls-server-name / TRELLIS_TEMPORAL_TLS_SERVER_NAME",
}
TLS_FLAG = "--temporal-tls / TRELLIS_TEMPORAL_TLS"


class TemporalTlsError(StartupFailure):
    """TLS settings that cannot work; the message names the setting (and file)."""


def _given(settings: Settings) -> list[str]:
    return [name for name in TLS_SETTINGS if getattr(settings, name) is not None]


def temporal_tls(settings: Settings) -> bool | TLSConfig:
    """What to pass the SDK as `tls`: a `TLSConfig` when a CA, client certificate or server
    name is set; else `TRELLIS_TEMPORAL_TLS`; unset, TLS exactly when an API key is set.

    Never None: `False` given to the SDK overrides its own rule (TLS when a key is given),
    and the key went out in cleartext. TemporalTlsError when a file cannot be read.
    """
    if _given(settings) and settings.temporal_tls is not False:
        return TLSConfig(
            server_root_ca_cert=_read(settings, "temporal_tls_ca_file"),
            client_cert=_read(settings, "temporal_tls_cert_file"),
            client_private_key=_read(settings, "temporal_tls_key_file"),
            domain=settings.temporal_tls_server_name,
        )
    if settings.temporal_tls is not None:
        return settings.temporal_tls
    return settings.temporal_api_key is not None


def _read(settings: Settings, name: str) -> bytes | None:
    path: Path | None = getattr(settings, name)
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise TemporalTlsError(
            f"cannot read {path} ({TLS_SETTINGS[name]}): {exc.strerror or exc}"
        ) from None


def check_temporal_tls(settings: Settings) -> None:
    """TLS settings that cannot work stop start-up in one line: a contradiction, half a
    client certificate, a file that cannot be read or holds no PEM of its kind (checked
    here, not as the SDK's long message at the first connect)."""
    given = _given(settings)
    if given and settings.temporal_tls is False:
        raise TemporalTlsError(
            f"TLS is turned off ({TLS_FLAG} false) but {TLS_SETTINGS[given[0]]} is set; "
            "drop one of them"
        )
    has_cert = settings.temporal_tls_cert_file is not None
    if has_cert != (settings.temporal_tls_key_file is not None):
        present, absent = ("cert", "key") if has_cert else ("key", "cert")
        raise TemporalTlsError(
            f"{TLS_SETTINGS[f'temporal_tls_{present}_file']} needs "
            f"{TLS_SETTINGS[f'temporal_tls_{absent}_file']} (a client certificate and its key)"
        )
    _check_pem(settings, "temporal_tls_ca_file", _certificates)
    _check_pem(settings, "temporal_tls_cert_file", _certificates)
    _check_pem(settings, "temporal_tls_key_file", _private_key)


def _certificates(data: bytes) -> str | None:
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(data)
    except ValueError:
        return "holds no PEM certificate"
    return None


def _private_key(data: bytes) -> str | None:
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        return "holds no PEM private key (without a passphrase)"
    return None


def _check_pem(settings: Settings, name: str, check: Callable[[bytes], str | None]) -> None:
    data = _read(settings, name)
    if data is None:
        return
    problem = check(data)
    if problem is not None:
        path = getattr(settings, name)
        raise TemporalTlsError(f"{path} ({TLS_SETTINGS[name]}) {problem}")


def check_no_tls_for_dev_server(settings: Settings) -> None:
    """`trellis dev` with its embedded dev server, which speaks no TLS: a TLS setting (or an
    API key, which turns TLS on) would only fail once the start-up timeout had passed."""
    if not settings.embedded_temporal or temporal_tls(settings) is False:
        return
    given = _given(settings)
    if given:
        what = TLS_SETTINGS[given[0]]
    elif settings.temporal_tls:
        what = TLS_FLAG
    else:
        what = "TRELLIS_TEMPORAL_API_KEY (it turns TLS on)"
    raise TemporalTlsError(
        f"{what} is for an external cluster (--temporal-address / TRELLIS_TEMPORAL_ADDRESS); "
        "the embedded Temporal dev server speaks no TLS"
    )


def untrusted_hint(reason: str) -> str:
    """A hint for a connect that failed on the server's certificate, else ''."""
    if "UnknownIssuer" in reason:
        return (
            "; the server's certificate is signed by a CA this process does not trust: "
            "set --temporal-tls-ca-file / TRELLIS_TEMPORAL_TLS_CA_FILE"
        )
    if "NotValidForName" in reason:
        return (
            "; the server's certificate is not for the name dialled: "
            "set --temporal-tls-server-name / TRELLIS_TEMPORAL_TLS_SERVER_NAME"
        )
    return ""
