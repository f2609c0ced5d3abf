"""Bounded request heads: uvicorn's httptools protocol with limits on what it reads before the app.

httptools (llhttp) has no size limit of its own: it buffers a header value however long
it grows, and uvicorn keeps every header line of a head that never ends, so one client
can make the server read (and hold) without end. This protocol counts the bytes of
each request head before they reach the parser and refuses, with a closed connection:

- a request line longer than `request_line` bytes: 414;
- a header line longer than `header` bytes: 431;
- a head (request line and all header lines) longer than `head` bytes: 431;
- a message whose body and trailers on the wire pass twice the body limit plus
  `head` (only a chunked body can: a declared length past the limit is answered 413
  by the app, and a body nobody reads is held back by uvicorn's flow control): 431.

The answer carries the standard error envelope and is written by the protocol itself,
since the request never reaches the app; it leaves one access line with status and
route "-". The connection is then half-closed and what the client still sends is
dropped (up to LINGER_SECONDS and LINGER_BYTES), so that it reads the answer, not a
reset. The limits are far above what real clients send (browsers and HTTP
libraries stay under 8 KB per line).

The scan costs one `bytes.find` for a usual head (the whole head in one read, shorter
than the smallest line limit); a long head is scanned line by line. A pipelined
request that starts in the same read as the end of the previous one is counted from
the next read on, so its bound is one read larger.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from hermes_server.http.logs import log_access, new_request_id

# How long, and how many of them, a refused connection's remaining bytes are read and
# dropped before it is closed (past the bytes, reading pauses until the close).
LINGER_SECONDS = 2.0
LINGER_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class HeadLimits:
    """Byte limits of one request: its request line, each header line, the whole head, the body."""

    request_line: int
    header: int
    head: int
    body: int


def _refusal(status: int, message: str, code: str) -> bytes:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                 "code": code}}).encode()
    return b"".join([
        STATUS_LINE[status],
        b"content-type: application/json; charset=utf-8\r\n",
        b"content-length: %d\r\n" % len(body),
        b"connection: close\r\n",
        b"\r\n",
        body,
    ])


class HeadLimitedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that refuses request heads past `limits` before parsing them."""

    limits: HeadLimits  # set by protocol_for

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        limits = self.limits
        # A head shorter than this has no line past any limit: one find() checks it.
        self._quick = min(limits.request_line, limits.header, limits.head)
        self._refused = False
        self._dropped = 0
        self._start_head()

    def _start_head(self) -> None:
        self._in_head = True
        self._head_bytes = 0  # bytes of this head read so far
        self._line_bytes = 0  # bytes of its current, unfinished line
        self._lines = 0  # finished non-empty lines: 0 means the current one is the request line
        self._after_head = 0  # body and trailer bytes of this message

    # -- parser callbacks ----------------------------------------------------

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._start_head()

    # -- reading -------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._refused:  # lingering: drop it
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.pause_reading()
            return
        if self._in_head:
            problem = self._scan_head(data)
        else:
            self._after_head += len(data)
            problem = None
            if self._after_head > 2 * self.limits.body + self.limits.head:
                problem = (431, "Request trailers too large.", "request_header_too_large")
        if problem is not None:
            self._refuse(*problem)
            return
        super().data_received(data)

    def _scan_head(self, data: bytes) -> tuple[int, str, str] | None:
        """Count `data` into the current head; the refusal when a limit is passed."""
        if self._head_bytes == 0:
            end = data.find(b"\r\n\r\n")
            if 0 <= end and end + 4 <= self._quick:
                self._head_bytes = end + 4  # should the parser not end the head here, scan on
                return None  # the whole head, and short: the parser takes it from here
        limits = self.limits
        start, size = 0, len(data)
        while start < size:
            newline = data.find(b"\n", start)
            stop = size if newline < 0 else newline
            self._line_bytes += stop - start
            self._head_bytes += stop - start + (newline >= 0)
            limit = limits.request_line if self._lines == 0 else limits.header
            if self._line_bytes > limit:
                if self._lines == 0:
                    return 414, f"Request line longer than {limit} bytes.", "request_line_too_long"
                return 431, f"Request header line longer than {limit} bytes.", "request_header_too_large"
            if self._head_bytes > limits.head:
                return 431, f"Request head longer than {limits.head} bytes.", "request_header_too_large"
            if newline < 0:
                return None
            blank = self._line_bytes <= 1  # "\r\n" (a lone "x\n" is refused by the parser)
            self._line_bytes = 0
            start = newline + 1
            if not blank:
                self._lines += 1
            elif self._lines:
                return None  # the end of the head: what follows is body (or the next request)
        return None

    def _refuse(self, status: int, message: str, code: str) -> None:
        """Answer (unless a response is still being written) and close; parse nothing more.

        A close while the client is still sending would reset the connection, and many
        clients then report the reset, not the answer. So the answer is followed by our end
        of the stream, and what the client still sends is discarded (never kept) for
        LINGER_SECONDS before the connection is closed.
        """
        self._refused = True
        log_access("-", None, status, 0.0, None, new_request_id())
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(_refusal(status, message, code))
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self.loop.call_later(LINGER_SECONDS, self.transport.close)
                return
        self.transport.close()


def protocol_for(limits: HeadLimits) -> type[asyncio.Protocol]:
    """The protocol class to pass as uvicorn's `http=`, bound to `limits`."""
    return type("HeadLimitedProtocol", (HeadLimitedProtocol,), {"limits": limits})
