"""One TLS context per process, shared by our HTTP clients: it must still verify servers."""

from __future__ import annotations

import ssl

from activities.executors.tls import default_tls


def test_the_shared_context_verifies_certificates_and_host_names() -> None:
    for trust_env in (True, False):
        context = default_tls(trust_env)
        assert context.verify_mode == ssl.CERT_REQUIRED
        assert context.check_hostname
        assert context.cert_store_stats()["x509_ca"] > 0  # a CA bundle is loaded
        assert default_tls(trust_env) is context  # built once


def test_a_client_that_ignores_the_environment_gets_its_own_context() -> None:
    # builtin:http's guarded client must not take SSL_CERT_FILE / SSL_CERT_DIR from the
    # environment: it does not share the context that may have read them.
    assert default_tls(trust_env=False) is not default_tls(trust_env=True)
