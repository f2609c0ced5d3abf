"""Server-sent events, shared by every stream: framing, the queue between producer and response,
the idle keepalive, and the headers upstream sends.

Framing is kept apart from transport (as in sse-starlette): a producer turns its
events into frames when they happen and puts them on an `EventQueue`; the response
drains the queue. Once the client is gone the queue stops taking frames, so a turn
that goes on without its client does not pile them up.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette.sse import EventSourceResponse

from hermes_server.domain.titles import scrub_surrogates

KEEPALIVE_FRAME = b": keepalive\n\n"


def event_frame(name: str, data: Any, *, ascii_only: bool = False) -> bytes:
    """`event: <name>` and one `data:` line of JSON (UTF-8 unless `ascii_only`, as each stream writes it)."""
    text = f"event: {name}\ndata: {json.dumps(data, ensure_ascii=ascii_only)}\n\n"
    return text.encode("ascii") if ascii_only else scrub_surrogates(text).encode("utf-8")


def data_frame(data: Any) -> bytes:
    """An unnamed event: one `data:` line of ASCII-escaped JSON (OpenAI's chunk framing)."""
    return f"data: {json.dumps(data)}\n\n".encode("ascii")


class EventQueue:
    """Frames waiting for the response, in order; `None` marks the end."""

    def __init__(self) -> None:
        self.listening = True
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def put(self, frame: bytes) -> None:
        """Queue a frame for the client (dropped once the client has gone)."""
        if self.listening:
            self._queue.put_nowait(frame)

    def close(self) -> None:
        """No more frames: the response ends after the queued ones."""
        if self.listening:
            self._queue.put_nowait(None)

    async def frames(self, keepalive_seconds: float) -> AsyncIterator[bytes]:
        """Queued frames until the end, with `: keepalive` after each idle interval.

        The idle timer restarts after every event and every keepalive (upstream's
        rule), which sse-starlette's fixed-period ping cannot express.
        """
        try:
            while True:
                try:
                    frame = await asyncio.wait_for(self._queue.get(), keepalive_seconds)
                except TimeoutError:
                    yield KEEPALIVE_FRAME
                    continue
                if frame is None:
                    return
                yield frame
        finally:
            self.listening = False


def sse_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Upstream's stream headers, exactly: no charset, no Connection, no security headers."""
    fixed = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no", **headers}
    return [(k.lower().encode("latin-1"), v.encode("utf-8", "surrogateescape")) for k, v in fixed.items()]


# Marks a response the pipeline must not add CORS headers to (upstream's run event stream
# writes its headers before its CORS middleware could).
CORS_EXEMPT = "hermes_cors_exempt"


def sse_response(frames: AsyncIterator[bytes], headers: dict[str, str], *, cors: bool = True) -> EventSourceResponse:
    """A streaming response that sends `frames` as they come, with upstream's headers."""
    response = EventSourceResponse(frames, ping=0)
    response.raw_headers = sse_headers(headers)
    setattr(response, CORS_EXEMPT, not cors)
    return response
