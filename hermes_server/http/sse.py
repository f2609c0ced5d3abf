"""Server-sent events, shared by every stream: framing, the queue between producer and response,
the idle keepalive, and the headers upstream sends.

Framing is kept apart from transport (as in sse-starlette): a producer makes protocol
events (chat/stream.py's encoders; any value with a `name`, `data` and `literal` is one)
and puts them on an `EventQueue`, which frames each as it comes; the response drains the
queue. Once the client is gone the queue stops taking events, so a turn that goes on
without its client does not pile them up.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

from sse_starlette.sse import EventSourceResponse

from hermes_server.domain.titles import scrub_surrogates

KEEPALIVE_FRAME = b": keepalive\n\n"
T = TypeVar("T")


class ServerEvent(Protocol):
    """One event as a stream sends it: `event: <name>` (or none) and one `data:` line."""

    @property
    def name(self) -> str | None:
        """The `event:` line's name; None: an unnamed event (OpenAI's and the runs' framing)."""

    @property
    def data(self) -> Any:
        """The `data:` line's JSON value, or its text as it is when `literal` (`[DONE]`)."""

    @property
    def literal(self) -> bool: ...


def frame(event: ServerEvent, *, ascii_only: bool) -> bytes:
    """The bytes of `event`: its JSON ASCII-escaped when `ascii_only`, else UTF-8 with lone
    surrogates replaced (as each stream writes it)."""
    data = event.data if event.literal else json.dumps(event.data, ensure_ascii=ascii_only)
    text = f"data: {data}\n\n" if event.name is None else f"event: {event.name}\ndata: {data}\n\n"
    return text.encode("ascii") if ascii_only else scrub_surrogates(text).encode("utf-8")


async def drain(queue: asyncio.Queue[T | None], keepalive_seconds: float, framed: Callable[[T], bytes],
                *, last: bytes = b"", done: Callable[[], None] = lambda: None) -> AsyncIterator[bytes]:
    """Frames of `queue`'s items until None (then `last`), with `: keepalive` after each idle
    interval; `done` runs when the stream ends, however it ends (the client gone included).

    The idle timer restarts after every event and every keepalive (upstream's rule), which
    sse-starlette's fixed-period ping cannot express.
    """
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), keepalive_seconds)
            except TimeoutError:
                yield KEEPALIVE_FRAME
                continue
            if item is None:
                if last:
                    yield last
                return
            yield framed(item)
    finally:
        done()


class EventQueue:
    """One stream's events, framed as they come (`ascii_only`: see `frame`), in order; `None` marks the end."""

    def __init__(self, *, ascii_only: bool) -> None:
        self.ascii_only = ascii_only
        self.listening = True
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def put(self, event: ServerEvent) -> None:
        """Queue an event for the client (dropped, unframed, once the client has gone)."""
        if self.listening:
            self._queue.put_nowait(frame(event, ascii_only=self.ascii_only))

    def close(self) -> None:
        """No more events: the response ends after the queued ones."""
        if self.listening:
            self._queue.put_nowait(None)

    def frames(self, keepalive_seconds: float) -> AsyncIterator[bytes]:
        """Queued frames until the end, with the idle keepalive (`drain`); the queue stops
        listening when they end."""
        return drain(self._queue, keepalive_seconds, _as_is, done=self._stop_listening)

    def _stop_listening(self) -> None:
        self.listening = False


def _as_is(chunk: bytes) -> bytes:
    return chunk


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
