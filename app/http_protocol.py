"""The API's HTTP/1.1 protocol: uvicorn's (httptools), with a bounded request head and the
API's error body on a request it cannot parse.

uvicorn bounds no request line or header: an outside audit's one 200 MB header was read
whole (35 s, +200 MB of the API's memory, other requests slowed to 1.9 s), and 50,000
headers were taken. A request whose head passes MAX_HEAD_BYTES is answered 431 and its
connection closed; the rest is never parsed or kept. A request the parser refuses (a request line
past httptools' own limit, bad syntax) was a plain-text 400; it carries the API's error
body now, as every other error does.
"""

from __future__ import annotations

import asyncio
import json

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

# Request line and headers together, as received (a browser's or a proxy's is a few KB; a
# large JWT about 8 KB; nginx allows 4 x 8 KB by default).
MAX_HEAD_BYTES = 64 * 1024


# After a refusal, what the client still sends is read and dropped this long before the
# connection closes: closing with unread data sends a reset, which loses the answer on its
# way (the client sees "connection reset", not the 431).
DISCARD_SECONDS = 2.0


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    _head_bytes = 0
    _head_done = True
    _refused = False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes, self._head_done = 0, False

    def on_headers_complete(self) -> None:
        self._head_done = True
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # dropped, not parsed or kept
        super().data_received(data)
        if self._head_done or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(
                431,
                "request_headers_too_large",
                f"The request line and headers are more than {MAX_HEAD_BYTES} bytes",
            )

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, "invalid_request", f"{msg} (the request line or a header is malformed)")

    def _refuse(self, status: int, code: str, message: str) -> None:
        """Answer with the API's error body and close the connection (the rest of the
        request is dropped unparsed meanwhile)."""
        body = json.dumps({"error": {"code": code, "message": message, "details": []}}).encode()
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self._refused = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        asyncio.get_running_loop().call_later(DISCARD_SECONDS, self.transport.close)
