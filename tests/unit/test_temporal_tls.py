"""TLS to Temporal: unset, it is on exactly when an API key is set, so a key is never sent
in the clear unless TLS is turned off explicitly."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from pydantic import SecretStr
from temporalio.client import Client

from app.settings import Settings
from app.temporal_tls import temporal_tls

# The first byte of a TLS record carrying a handshake (the ClientHello).
TLS_HANDSHAKE = 0x16
HTTP2_PREFACE = b"PRI * HTTP/2.0"


@pytest.mark.parametrize(
    ("key", "tls", "expected"),
    [
        ("k3y", None, True),
        ("k3y", False, False),
        ("k3y", True, True),
        (None, None, False),
        (None, True, True),
    ],
)
def test_tls_is_on_when_a_key_is_set_unless_turned_off(
    key: str | None, tls: bool | None, expected: bool
) -> None:
    settings = Settings(temporal_api_key=SecretStr(key) if key else None, temporal_tls=tls)
    assert temporal_tls(settings) is expected


async def _first_bytes(settings: Settings) -> bytes:
    """What a client connecting with `settings` sends first to a plain TCP listener."""
    received = bytearray()
    got = asyncio.Event()

    async def listen(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await reader.read(64))
        got.set()
        writer.close()

    server = await asyncio.start_server(listen, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connect = asyncio.ensure_future(
        Client.connect(
            f"127.0.0.1:{port}",
            tls=temporal_tls(settings),
            api_key=settings.temporal_api_key_value,
            connect_timeout=timedelta(seconds=2),
        )
    )
    try:
        await asyncio.wait_for(got.wait(), 10)
    finally:
        connect.cancel()
        await asyncio.gather(connect, return_exceptions=True)
        server.close()
        await server.wait_closed()
    return bytes(received)


async def test_an_api_key_without_a_tls_setting_is_sent_over_tls() -> None:
    sent = await _first_bytes(Settings(temporal_api_key=SecretStr("k3y")))
    assert sent[0] == TLS_HANDSHAKE
    assert HTTP2_PREFACE not in sent


async def test_tls_turned_off_explicitly_speaks_cleartext_as_asked() -> None:
    sent = await _first_bytes(Settings(temporal_api_key=SecretStr("k3y"), temporal_tls=False))
    assert sent.startswith(HTTP2_PREFACE)
