"""How executors reach other systems, from settings: the catalog of MCP servers and A2A
agents, where builtin:http may connect, and the signer of the service tokens calls carry."""

from __future__ import annotations

import os

from activities.executors.catalog import Catalog, load_catalog
from activities.executors.http_guard import HttpPolicy
from activities.executors.service_token import ServiceTokenError, ServiceTokenSigner
from app.settings import Settings


def executor_catalog(settings: Settings) -> Catalog:
    """The executor catalog from settings (file, refresh period, `${VAR}`s from our env).

    CatalogError names the file and its fault.
    """
    return load_catalog(
        settings.executors_file,
        refresh_seconds=settings.catalog_refresh_seconds,
        environ=os.environ,
    )


def http_policy(settings: Settings) -> HttpPolicy:
    """Where builtin:http may connect and how much it reads."""
    return HttpPolicy(
        allowed_networks=settings.http_allowed_networks,
        max_response_bytes=settings.http_max_response_bytes,
    )


def service_token_signer(settings: Settings) -> ServiceTokenSigner | None:
    """The signer, or None when no key is set (then no call carries a token).

    ServiceTokenError names the setting that is wrong.
    """
    key = settings.service_token_key.get_secret_value() if settings.service_token_key else None
    source = "TRELLIS_SERVICE_TOKEN_KEY"
    path = settings.service_token_key_file
    if path is not None:
        if key is not None:
            raise ServiceTokenError(
                "set TRELLIS_SERVICE_TOKEN_KEY or TRELLIS_SERVICE_TOKEN_KEY_FILE, not both"
            )
        source = f"the key in {path} (TRELLIS_SERVICE_TOKEN_KEY_FILE)"
        try:
            key = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise ServiceTokenError(
                f"TRELLIS_SERVICE_TOKEN_KEY_FILE {path} cannot be read ({reason or exc})"
            ) from None
        if not key:
            # Turned service tokens off without a word: a key file is given to be used.
            raise ServiceTokenError(f"TRELLIS_SERVICE_TOKEN_KEY_FILE {path} is empty")
    if key is None:
        return None
    return ServiceTokenSigner(
        key=key,
        algorithm=settings.service_token_algorithm,
        issuer=settings.service_token_issuer,
        audience=settings.service_token_audience,
        ttl_seconds=settings.service_token_ttl_seconds,
        header=settings.service_token_header,
        key_id=settings.service_token_key_id,
        key_source=source,
    )
