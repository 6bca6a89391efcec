"""What `builtin:http` may reach: public addresses only, unless the operator allows more.

A workflow's author (or its input, through a template) chooses the URL, so without a guard a
step could read cloud metadata (169.254.169.254) or a service that listens only inside.
The check runs where the connection is made, after DNS resolution, for the first request
and for every redirect: the host's addresses are resolved once, every one must be allowed,
and the socket connects to an address that was checked (DNS cannot answer differently
the second time). TLS still verifies the certificate against the host name.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpcore
import httpx

from activities.executors.redirect_headers import drop_off_origin
from activities.executors.tls import default_tls

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
DEFAULT_MAX_RESPONSE_BYTES = 1_048_576
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.ip_network("::/96")


class AddressRefused(Exception):
    """The URL's host is, or resolves to, an address builtin:http may not reach."""


@dataclass(frozen=True)
class HttpPolicy:
    """Where builtin:http may connect, and how much of an answer it reads."""

    allowed_networks: tuple[IPNetwork, ...] = ()
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_redirects: int = 5

    def refusal(self, address: IPAddress) -> str | None:
        """Why `address` may not be reached ("loopback", ...), or None when it may."""
        if any(address in network for network in self.allowed_networks):
            return None
        kind = address_kind(address)
        return None if kind == "public" else kind


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries, which a translator or tunnel on the way reaches:
    mapped (`::ffff:127.0.0.1`), translated (`::ffff:0:127.0.0.1`), compatible
    (`::127.0.0.1`), NAT64's well-known prefix (`64:ff9b::a9fe:a9fe` is 169.254.169.254),
    6to4 (`2002:7f00:1::`). Python calls the last four global: they were let through."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64 or address in _TRANSLATED or (address in _COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    return None


def address_kind(address: IPAddress) -> str:
    """public, or the kind of address that is refused unless allowed."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64:
            return "non-public"  # a network's own translator, to its own IPv4 hosts
        address = _carried_ipv4(address) or address
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address in _UNIQUE_LOCAL:
        return "unique-local"
    if address.is_unspecified:
        return "unspecified"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if address in _SHARED or not address.is_global:
        return "non-public"
    return "public"


def parse_networks(value: str | Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDR networks from a comma-separated string, a JSON array or a list; ValueError
    naming a bad one."""
    if isinstance(value, str) and value.strip().startswith("["):
        value = [str(item) for item in json.loads(value)]
    items = value.split(",") if isinstance(value, str) else value
    networks = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not a CIDR network (e.g. 10.0.0.0/8)") from None
    return tuple(networks)


class GuardedBackend(httpcore.AnyIOBackend):
    """httpcore's network backend, connecting only to addresses the policy allows."""

    def __init__(self, policy: HttpPolicy) -> None:
        self._policy = policy

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await _resolve(host, port, timeout)
        refused = [(a, why) for a in addresses if (why := self._policy.refusal(a)) is not None]
        if refused:
            address, why = refused[0]
            named = host.strip("[]") if host.strip("[]") == str(address) else f"{host} ({address})"
            raise AddressRefused(
                f"builtin:http may not connect to {named}: its address is {why} "
                "(TRELLIS_HTTP_ALLOWED_NETWORKS can allow it)"
            )
        last: Exception | None = None
        for address in addresses:  # every one was checked; connect to the first that answers
            try:
                return await super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                last = exc
        assert last is not None
        raise last


async def _resolve(host: str, port: int, seconds: float | None) -> Sequence[IPAddress]:
    try:
        with anyio.fail_after(seconds):
            infos = await anyio.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise httpcore.ConnectTimeout(f"resolving {host} timed out") from None
    except OSError as exc:
        raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from None
    found: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address not in found:
            found.append(address)
    if not found:
        raise httpcore.ConnectError(f"{host} has no address")
    return found


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over the guarded backend; proxies from the environment are not
    used (a proxy would choose the address the guard must check)."""

    def __init__(self, policy: HttpPolicy) -> None:
        ssl_context = default_tls(trust_env=False)
        super().__init__(verify=ssl_context, trust_env=False)
        # httpx builds its pool without a way to pass the backend: replace the pool.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, network_backend=GuardedBackend(policy)
        )


def guarded_client(policy: HttpPolicy) -> httpx.AsyncClient:
    """The HTTP client builtin:http uses: guarded, following redirects (each one checked,
    and a step's own headers dropped when one leaves its URL's origin)."""
    return httpx.AsyncClient(
        transport=GuardedTransport(policy),
        event_hooks={"request": [drop_off_origin]},
        follow_redirects=True,
        max_redirects=policy.max_redirects,
        trust_env=False,
        timeout=httpx.Timeout(30.0),
    )
