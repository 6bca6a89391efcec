"""The TLS context of our HTTP clients that verify servers against the default CA bundle.

httpx builds a new context for every client, loading the whole bundle: ~30 ms of CPU
here, paid for each client a process (or a test) builds. One context serves any number of
clients, so it is built once per process (and per `trust_env`).
"""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def default_tls(trust_env: bool = True) -> ssl.SSLContext:
    """httpx's default context, built once: certifi's bundle, or with `trust_env` the
    `SSL_CERT_FILE` / `SSL_CERT_DIR` the process started with."""
    return httpx.create_ssl_context(trust_env=trust_env)
