"""The request test control acts on, known one way: the context the fault layer sets around
each handler.

Whatever runs on a request's behalf (its handler, the chat turn it starts in a task of its
own, which inherits the context, each hook the use cases ask and each write the storage
gates let through) reads the same `RequestContext` with `current()`: what the fault layer
matches faults on, the faults that fired, each hook's decision, and the storage refusal of
the request's writes. Nothing is passed down through the core.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestContext:
    """Route, method and path session id of one request, and what test control did to it."""

    route: str
    method: str
    session_id: str | None
    # The request's ASGI scope (dropping its connection needs uvicorn's transport, kept there).
    scope: Mapping[str, Any] = field(default_factory=dict, repr=False)
    fired: list[str] = field(default_factory=list)
    # Each hook decides once per request: asking again (a turn's two writes) gets the same answer
    # (the fault that acts, testing/faults.py's `Fault`, or None).
    decisions: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    # Every write of the request (and of the turn it starts) fails with this storage reason.
    write_refusal: str | None = None


_CURRENT: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("hermes_request", default=None)


def current() -> RequestContext | None:
    """The request being served (None outside any request the fault layer wrapped)."""
    return _CURRENT.get()


@contextmanager
def serving(request: RequestContext) -> Iterator[RequestContext]:
    """`request` is the current one inside the block (and in the tasks it starts), and no longer
    after it, so nothing carries over to the next request on the same connection."""
    token = _CURRENT.set(request)
    try:
        yield request
    finally:
        _CURRENT.reset(token)
