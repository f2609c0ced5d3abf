"""Bounded request heads: uvicorn's httptools protocol with limits on what it reads before the app.

httptools (llhttp) has no size limit of its own: it buffers a header value however long
it grows, and uvicorn keeps every header line of a head that never ends, so one client
can make the server read (and hold) without end. This protocol counts the bytes of
each request head before they reach the parser (cli/head_limits.py: by default exactly
what hermes-agent 0.19.0 accepts) and refuses, with a closed connection:

- a head past a limit of cli/head_limits.py: 400, with the standard error envelope, or
  0.19.0's own answer when the server answers as 0.19.0 (`--upstream-quirks`);
- a message whose body and trailers on the wire pass twice the body limit plus the
  head limit (only a chunked body can: a declared length past the limit is answered
  413 by the app, and a body nobody reads is held back by uvicorn's flow control): 431.

The answer is written by the protocol itself, since the request never reaches the app;
it leaves one access line with status and route "-". The connection is then half-closed
and what the client still sends is dropped (up to LINGER_SECONDS and LINGER_BYTES), so
that it reads the answer, not a reset (0.19.0 closes at once, and a client still sending
may see the reset).

A pipelined request that starts in the same read as the end of the previous one is
counted from the next read on, so its bound is one read larger.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hermes_server.cli.head_limits import HeadLimits, HeadScanner, answer, envelope_answer
from hermes_server.http.logs import log_access, new_request_id

# How long, and how many of them, a refused connection's remaining bytes are read and
# dropped before it is closed (past the bytes, reading pauses until the close).
LINGER_SECONDS = 2.0
LINGER_BYTES = 4 * 1024 * 1024


class HeadLimitedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol that refuses request heads past `limits` before parsing them."""

    limits: HeadLimits  # set by protocol_for
    upstream: bool  # answer a refused head as 0.19.0 does; set by protocol_for

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scanner = HeadScanner(self.limits)
        self._refused = False
        self._dropped = 0
        self._start_head()

    def _start_head(self) -> None:
        self._in_head = True
        self._scanner.start()
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
            refusal = self._scanner.feed(data)
            if refusal is not None:
                self._refuse(400, answer(refusal, self.upstream))
                return
        else:
            self._after_head += len(data)
            if self._after_head > 2 * self.limits.body + self.limits.head:
                self._refuse(431, envelope_answer(431, "request_header_too_large", "Request trailers too large."))
                return
        super().data_received(data)

    def _refuse(self, status: int, reply: bytes) -> None:
        """Answer (unless a response is still being written) and close; parse nothing more.

        A close while the client is still sending would reset the connection, and many
        clients then report the reset, not the answer. So the answer is followed by our end
        of the stream, and what the client still sends is discarded (never kept) for
        LINGER_SECONDS before the connection is closed.
        """
        self._refused = True
        log_access("-", None, status, 0.0, None, new_request_id())
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(reply)
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self.loop.call_later(LINGER_SECONDS, self.transport.close)
                return
        self.transport.close()


def protocol_for(limits: HeadLimits, upstream: bool = False) -> type[asyncio.Protocol]:
    """The protocol class to pass as uvicorn's `http=`, bound to `limits` (and to 0.19.0's answers when
    `upstream`)."""
    return type("HeadLimitedProtocol", (HeadLimitedProtocol,), {"limits": limits, "upstream": upstream})
