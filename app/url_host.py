"""A host as it is written in a URL: an IPv6 address in brackets (`http://[::1]:8000`)."""

from __future__ import annotations


def url_host(host: str) -> str:
    """`host` for a URL's authority; `::1` is `[::1]`, anything else as it is."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
