"""builtin:http reaches public addresses only (after DNS, on every redirect) unless the
operator allows more, and reads a bounded answer. The peer below listens on 127.0.0.1."""

from __future__ import annotations

import ipaddress
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from activities.executors.base import PermanentError
from activities.executors.builtin import BuiltinExecutor
from activities.executors.http_guard import HttpPolicy, address_kind, parse_networks
from app.settings import Settings
from tests.executors.conftest import MakeCall
from tests.peers.serving import ServedApp


@dataclass
class Peer:
    url: str
    calls: Counter[str]
    # The same app on 127.0.0.2, so an allow-list can admit it and not 127.0.0.1.
    other_url: str


@pytest.fixture(scope="module")
def peer() -> Iterator[Peer]:
    calls: Counter[str] = Counter()

    async def hello(request: Request) -> Response:
        calls["hello"] += 1
        return JSONResponse({"hello": "world"})

    async def redirect(request: Request) -> Response:
        calls["redirect"] += 1
        return RedirectResponse(request.query_params.get("to", "/redirect"), status_code=302)

    async def sized(request: Request) -> Response:
        return Response(b"x" * int(request.path_params["n"]), media_type="text/plain")

    async def chunked(request: Request) -> Response:
        from starlette.responses import StreamingResponse

        async def body() -> AsyncIterator[bytes]:
            for _ in range(int(request.path_params["n"])):
                yield b"y" * 1000

        return StreamingResponse(body(), media_type="text/plain")

    app = Starlette(
        routes=[
            Route("/hello", hello),
            Route("/redirect", redirect),
            Route("/sized/{n:int}", sized),
            Route("/chunked/{n:int}", chunked),
        ]
    )
    served = ServedApp(app).start()
    other = ServedApp(app, host="127.0.0.2").start()
    yield Peer(served.base_url, calls, other.base_url)
    other.stop()
    served.stop()


def executor(allowed: str = "", max_bytes: int = 1_048_576) -> BuiltinExecutor:
    return BuiltinExecutor(
        HttpPolicy(allowed_networks=parse_networks(allowed), max_response_bytes=max_bytes)
    )


async def get(executor: BuiltinExecutor, make_call: MakeCall, url: str) -> object:
    try:
        outcome = await executor.execute(make_call("builtin:http", {"url": url}))
    finally:
        await executor.close()
    return outcome.output


class TestRefusedAddresses:
    @pytest.mark.parametrize(
        ("host", "kind"),
        [
            ("127.0.0.1", "loopback"),
            ("[::1]", "loopback"),
            ("169.254.169.254", "link-local"),  # cloud metadata
            ("[fe80::1]", "link-local"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("[fd00::1]", "unique-local"),
            ("0.0.0.0", "unspecified"),
            ("[::ffff:127.0.0.1]", "loopback"),
            # IPv4 carried in IPv6 that Python calls global (found by an audit: let through).
            ("[::127.0.0.1]", "loopback"),
            ("[::ffff:0:127.0.0.1]", "loopback"),
            ("[64:ff9b::a9fe:a9fe]", "link-local"),  # NAT64's 169.254.169.254
            ("[64:ff9b:1::7f00:1]", "non-public"),
            ("[2002:a9fe:a9fe::]", "link-local"),  # 6to4
            ("[2002:7f00:1::]", "loopback"),
            ("[400::1]", "reserved"),  # IETF-reserved, yet "global" to Python
            ("100.64.0.1", "non-public"),
            ("2130706433", "loopback"),  # 127.0.0.1 written as one number
        ],
    )
    async def test_refused_permanently_without_connecting(
        self, make_call: MakeCall, host: str, kind: str
    ) -> None:
        started = time.monotonic()
        with pytest.raises(PermanentError) as info:
            await get(executor(), make_call, f"http://{host}:9/latest/meta-data")
        assert f"its address is {kind} (TRELLIS_HTTP_ALLOWED_NETWORKS can allow it)" in str(
            info.value
        )
        assert time.monotonic() - started < 5

    async def test_a_name_resolving_to_loopback_is_refused(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        before = peer.calls["hello"]
        url = peer.url.replace("127.0.0.1", "localhost")
        with pytest.raises(PermanentError, match=r"may not connect to localhost \("):
            await get(executor(), make_call, f"{url}/hello")
        assert peer.calls["hello"] == before  # nothing reached the peer

    async def test_the_peer_itself_is_refused_without_an_allow_list(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        before = peer.calls["hello"]
        with pytest.raises(PermanentError, match=r"127\.0\.0\.1: its address is loopback"):
            await get(executor(), make_call, f"{peer.url}/hello")
        assert peer.calls["hello"] == before

    def test_public_addresses_are_public(self) -> None:
        for address in ("93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"):
            assert address_kind(ipaddress.ip_address(address)) == "public"


class TestAllowList:
    async def test_an_allowed_network_is_reached(self, peer: Peer, make_call: MakeCall) -> None:
        output = await get(executor("127.0.0.0/8"), make_call, f"{peer.url}/hello")
        assert output["status"] == 200  # type: ignore[index]
        assert output["body"] == {"hello": "world"}  # type: ignore[index]

    async def test_a_name_is_allowed_when_every_address_it_resolves_to_is(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        url = peer.url.replace("127.0.0.1", "localhost")
        output = await get(executor("127.0.0.0/8,::1/128"), make_call, f"{url}/hello")
        assert output["body"] == {"hello": "world"}  # type: ignore[index]

    def test_the_setting_takes_a_comma_separated_list(self) -> None:
        settings = Settings(http_allowed_networks="10.0.0.0/8, fd00::/8,127.0.0.1")  # type: ignore[arg-type]
        assert [str(n) for n in settings.http_allowed_networks] == [
            "10.0.0.0/8",
            "fd00::/8",
            "127.0.0.1/32",
        ]
        assert Settings().http_allowed_networks == ()
        assert Settings().http_max_response_bytes == 1_048_576

    def test_a_malformed_network_is_named(self) -> None:
        with pytest.raises(ValueError, match=r"'10\.0\.0\.300/8' is not a CIDR network"):
            Settings(http_allowed_networks="10.0.0.300/8")  # type: ignore[arg-type]


class TestRedirects:
    async def test_a_redirect_within_allowed_networks_is_followed(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        url = f"{peer.url}/redirect?to=/hello"
        output = await get(executor("127.0.0.0/8"), make_call, url)
        assert output["body"] == {"hello": "world"}  # type: ignore[index]

    async def test_a_redirect_to_cloud_metadata_is_refused(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        url = f"{peer.url}/redirect?to=http://169.254.169.254/latest/meta-data"
        with pytest.raises(PermanentError, match=r"169\.254\.169\.254: its address is link-local"):
            await get(executor("127.0.0.0/8"), make_call, url)

    async def test_a_redirect_to_a_name_resolving_to_a_refused_address_is_refused(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        before = peer.calls["hello"]
        # 127.0.0.2 is allowed; `localhost` resolves to 127.0.0.1, which is not.
        port = peer.url.rsplit(":", 1)[1]
        url = f"{peer.other_url}/redirect?to=http://localhost:{port}/hello"
        with pytest.raises(PermanentError, match=r"may not connect to localhost \(127.0.0.1\)"):
            await get(executor("127.0.0.2/32"), make_call, url)
        assert peer.calls["redirect"] > 0
        assert peer.calls["hello"] == before

    async def test_endless_redirects_stop(self, peer: Peer, make_call: MakeCall) -> None:
        url = f"{peer.url}/redirect"  # to itself, forever
        with pytest.raises(PermanentError, match="redirected more than 5 times"):
            await get(executor("127.0.0.0/8"), make_call, url)


class TestResponseSize:
    async def test_an_answer_within_the_limit_is_read(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        output = await get(executor("127.0.0.0/8", 1000), make_call, f"{peer.url}/sized/1000")
        assert output["body"] == "x" * 1000  # type: ignore[index]

    async def test_a_declared_larger_answer_is_refused(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        with pytest.raises(PermanentError, match="answered with more than 1000 bytes"):
            await get(executor("127.0.0.0/8", 1000), make_call, f"{peer.url}/sized/1001")

    async def test_a_streamed_answer_stops_at_the_limit(
        self, peer: Peer, make_call: MakeCall
    ) -> None:
        # No Content-Length: 10 MB would stream; reading stops past 5,000 bytes.
        with pytest.raises(PermanentError, match="answered with more than 5000 bytes"):
            await get(executor("127.0.0.0/8", 5000), make_call, f"{peer.url}/chunked/10000")
