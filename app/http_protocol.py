"""The API's HTTP/1.1 protocol: uvicorn's (httptools), with a bounded request head and the
API's error body on a request it cannot parse.

uvicorn bounds no request line or header: an outside audit's one 200 MB header was read
whole (35 s, +200 MB of the API's memory, other requests slowed to 1.9 s), and 50,000
headers were taken. A request whose head passes MAX_HEAD_BYTES is answered 431 and its
connection closed; the rest is never parsed or kept. A request the parser refuses (a
request line past httptools' own limit, bad syntax) was a plain-text 400; it carries the
API's error body now, as every other error does.

At shutdown, a response whose client stopped reading (the socket's buffers full, uvicorn's
writes paused, and nothing of what waits taken in a whole check's interval) can never end:
a live event stream of a long log held the API's exit for the whole grace (10 s), then
ended in an ERROR line. Its connection is dropped once it is found stalled after the
shutdown began; a client that reads, however slowly, gets its response's end as before.

A head is measured two ways: by what the parser hands over (the URL, each header), which
sees a whole head that came in one read; and, while a head is still incomplete, by the
reads it spans, which bounds what the parser buffers for one header that never ends.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import struct
import termios
from datetime import UTC, datetime

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.arrival import ARRIVED_AT

# Request line and headers together, as received (a browser's or a proxy's is a few KB; a
# large JWT about 8 KB; nginx allows 4 x 8 KB by default).
MAX_HEAD_BYTES = 64 * 1024
# After a refusal, what the client still sends is read and dropped this long before the
# connection closes: closing with unread data sends a reset, which loses the answer on its
# way (the client sees "connection reset", not the 431).
DISCARD_SECONDS = 2.0
# Each header's ": " and CRLF, as it was on the wire.
HEADER_FRAMING = 4
# How often, after the shutdown began, an open connection is looked at for a client that
# stopped reading (a stream ends within ~1 s of the shutdown when its client reads).
STALL_CHECK_SECONDS = 1.0
# How long a connection's writes stay paused with nothing taken, over three looks, before
# it is dropped (a client reading in bursts is not cut between two of them). Shorter than
# an event stream's own shutdown grace (app/routes/events.py), which would cancel its send
# and end it "without completing response" (an ERROR line) first.
STALLED_SECONDS = 2.0


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    _head_bytes = 0  # the URL and headers the parser handed over for this message
    _spanned = 0  # bytes of the reads this message's incomplete head spanned whole
    _head_done = True
    _refused = False
    _refusal: bytes | None = None  # written once the responses before it are sent

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # dropped, not parsed or kept
        in_head = not self._head_done
        super().data_received(data)
        if self._refused or self._head_done or not in_head:
            return
        # The whole read was head: it began before this read and has not ended after it.
        self._spanned += len(data)
        if self._spanned > MAX_HEAD_BYTES:
            self._refuse_head()

    def on_message_begin(self) -> None:
        if self._refused:
            return
        super().on_message_begin()
        # Its first bytes were read: the request arrived (app/arrival.py).
        self.scope[ARRIVED_AT] = datetime.now(UTC)  # type: ignore[literal-required]
        self._head_bytes = self._spanned = 0
        self._head_done = False

    def on_url(self, url: bytes) -> None:
        if self._refused:
            return
        super().on_url(url)
        self._head_bytes += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._refused:
            return
        super().on_header(name, value)
        self._head_bytes += len(name) + len(value) + HEADER_FRAMING

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        self._head_done = True
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse_head()  # no request cycle for it: the app never sees it
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._send_refusal_when_idle()

    _resumed = 0  # times the transport let writes go on: the client took what waited
    _lost = False  # the connection is gone

    def resume_writing(self) -> None:
        self._resumed += 1
        super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        super().connection_lost(exc)

    def shutdown(self) -> None:
        super().shutdown()
        self.loop.call_later(STALL_CHECK_SECONDS, self._drop_if_stalled, None, 0.0)

    def _drop_if_stalled(self, before: tuple[int, int, int] | None, since: float) -> None:
        """Abort the connection when its writes have stayed paused for STALLED_SECONDS with
        no byte taken by the client: never resumed in between (a slow reader's writes
        resume and pause again in turns), and no fewer bytes waiting, neither here nor in
        the kernel's send queue (a slow reader drains that first: megabytes, where what
        waits here moves only when the kernel takes more)."""
        if self._lost:
            return  # a response's end closes its connection only once what waits is sent
        paused = self.flow is not None and self.flow.write_paused
        unsent = _kernel_unsent(self.transport) if paused else None
        now = None
        if unsent is not None:
            now = (self._resumed, self.transport.get_write_buffer_size(), unsent)
        if now is None or before is None or not _no_progress(before, now):
            before, since = now, self.loop.time()  # moving (or not paused): look again
        elif self.loop.time() - since >= STALLED_SECONDS:
            # Aborted, the response counts as disconnected: no "without completing" line.
            self.transport.abort()
            return
        self.loop.call_later(STALL_CHECK_SECONDS, self._drop_if_stalled, before, since)

    def send_400_response(self, msg: str) -> None:
        if not self._refused:
            self._refuse(
                400, "invalid_request", f"{msg} (the request line or a header is malformed)"
            )

    def _refuse_head(self) -> None:
        message = f"The request line and headers are more than {MAX_HEAD_BYTES} bytes"
        self._refuse(431, "request_headers_too_large", message)

    def _refuse(self, status: int, code: str, message: str) -> None:
        """Answer with the API's error body and close the connection, once the responses
        to the requests before it on the connection are sent (pipelining); what the client
        sends meanwhile is dropped unparsed."""
        body = json.dumps({"error": {"code": code, "message": message, "details": []}}).encode()
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        self._refused = True
        self._refusal = b"".join(head) + body
        self._send_refusal_when_idle()

    def _send_refusal_when_idle(self) -> None:
        if self._refusal is None or self.transport.is_closing():
            return
        if self.pipeline or (self.cycle is not None and not self.cycle.response_complete):
            return  # a response before it is under way: on_response_complete comes back
        self.transport.write(self._refusal)
        self._refusal = None
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(DISCARD_SECONDS, self.transport.close)


def _no_progress(before: tuple[int, int, int], now: tuple[int, int, int]) -> bool:
    resumed, waiting, unsent = now
    return resumed == before[0] and waiting >= before[1] and unsent >= before[2]


def _kernel_unsent(transport: asyncio.BaseTransport) -> int | None:
    """Bytes the kernel holds for the client, sent or not, that it has not acknowledged
    (Linux's TIOCOUTQ); None where that cannot be asked (a connection is then never taken
    for stalled)."""
    sock = transport.get_extra_info("socket")
    try:
        answer = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (AttributeError, OSError, ValueError):
        return None
    unsent: int = struct.unpack("i", answer)[0]
    return unsent
