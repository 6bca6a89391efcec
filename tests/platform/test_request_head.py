"""The API's request head is bounded (431 past 64 KiB, the rest never read) and a request
it cannot parse gets the API's error body, on `trellis api` as it serves."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from pathlib import Path

import httpx
import pytest

from app.http_protocol import MAX_HEAD_BYTES
from tests.platform.conftest import api_processes


def exchange(url: str, request: bytes, chunk: int = 64 * 1024) -> tuple[int, dict[str, str], bytes]:
    """Send `request` raw (as far as the server reads it); the status, headers and body."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        try:
            for at in range(0, len(request), chunk):
                conn.sendall(request[at : at + chunk])
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before it was all sent
        answer = b""
        while data := conn.recv(65536):
            answer += data
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), {k.lower(): v for k, v in headers.items()}, body


@pytest.mark.parametrize("workers", [1, 2])
def test_heads_past_the_bound_are_431_and_the_api_serves_on(tmp_path: Path, workers: int) -> None:
    with api_processes(tmp_path, workers=workers) as (_, url):
        huge = b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 5_000_000
        huge += b"\r\n\r\n"
        started = time.monotonic()
        status, headers, body = exchange(url, huge)
        assert (status, headers["connection"]) == (431, "close")
        error = json.loads(body)["error"]
        assert error["code"] == "request_headers_too_large"
        assert str(MAX_HEAD_BYTES) in error["message"]
        assert time.monotonic() - started < 5

        many = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-A: b\r\n" * 20_000 + b"\r\n"
        assert exchange(url, many)[0] == 431

        # Within the bound: a 40 KB header (a large token) is served; a body of any size
        # is the body limit's business, not the head's.
        fine = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Token: " + b"t" * 40_000
        assert exchange(url, fine + b"\r\nConnection: close\r\n\r\n")[0] == 200
        body_of_a_mb = json.dumps({"name": "big", "description": "d" * 1_000_000}).encode()
        post = (
            b"POST /api/v1/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body_of_a_mb)).encode() + b"\r\n\r\n"
        )
        status, _, body = exchange(url, post + body_of_a_mb)
        assert status == 400 and json.loads(body)["error"]["code"] == "invalid_request"
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200


def test_a_request_it_cannot_parse_gets_the_apis_error_body(tmp_path: Path) -> None:
    with api_processes(tmp_path, workers=1) as (_, url):
        status, headers, body = exchange(url, b"GET /healthz HTTP/1.1\r\nBad Header\r\n\r\n")
        assert (status, headers["content-type"]) == (400, "application/json")
        assert json.loads(body)["error"]["code"] == "invalid_request"


def statuses(url: str, request: bytes) -> list[int]:
    """Send `request` in one write; the status of every response on the connection."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while data := conn.recv(65536):
                answer += data
    return [int(code) for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)]


def test_heads_in_one_read_pipelined_requests_and_malformed_heads(tmp_path: Path) -> None:
    with api_processes(tmp_path, workers=1) as (_, url):
        head = b"Host: 127.0.0.1\r\n"
        healthz = b"GET /healthz HTTP/1.1\r\n" + head + b"\r\n"
        # A whole head past the bound, however it is read: 431.
        big = b"GET /healthz HTTP/1.1\r\n" + head + b"X-Big: " + b"a" * 110_000 + b"\r\n\r\n"
        assert statuses(url, big) == [431]
        # Pipelined: the responses before a refused head are sent whole, in order, first.
        assert statuses(url, healthz + healthz + big) == [200, 200, 431]
        # A request's body counts for nothing of the next request's head.
        body = json.dumps({"name": "x", "description": "d" * 100_000}).encode()
        post = (
            b"POST /api/v1/workflows HTTP/1.1\r\n" + head + b"Content-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        assert statuses(url, post + healthz) == [400, 200]
        # A malformed head in a large read is refused once, with the API's error body.
        assert statuses(url, healthz + b"GET / HTTP/1.1\r\nBad Header\r\n" + b"x" * 100_000) == [
            200,
            400,
        ]
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
