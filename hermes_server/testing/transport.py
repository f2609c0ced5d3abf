"""Dropping a client's connection with no response at all (the `connection_reset` fault, a cut stream).

ASGI has no message for this, so `KeepTransport`, the outermost layer test control
stacks, keeps uvicorn's own `send` in the scope, and `abort_connection` closes the
transport behind it with a TCP reset.
"""

from __future__ import annotations

import asyncio
import socket
import struct

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

# Where the layers leave what they share in the request's scope.
RAW_SEND = "hermes.raw_send"
RESET_MARK = "hermes.connection_reset"


class KeepTransport:
    """Outermost layer: remember uvicorn's `send`, whose transport a connection reset closes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND] = send
        await self.app(scope, receive, send)


async def abort_connection(scope: Scope) -> None:
    """Drop the client's TCP connection with a reset, so it sees no response at all.

    ASGI has no message for this, so we use the transport behind uvicorn's `send`
    (KeepTransport leaves it in the scope): SO_LINGER 0 turns the close into a RST.
    """
    scope[RESET_MARK] = True
    cycle = getattr(scope.get(RAW_SEND), "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise RuntimeError("connection_reset needs uvicorn's HTTP transport")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass  # a plain close is still a dropped connection
    transport.abort()
    # uvicorn learns of the loss on a later loop turn; until then it would still try to answer.
    for _ in range(100):
        if getattr(cycle, "disconnected", True):
            break
        await asyncio.sleep(0)


class InjectedDisconnect(Exception):
    """Raised inside a handler (at a hook) to drop the connection with no response at all; the fault
    layer answers it with `ConnectionReset`."""


class ConnectionReset(Response):
    """A 'response' that sends nothing and resets the connection."""

    def __init__(self) -> None:
        super().__init__(status_code=599)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await abort_connection(scope)
        # Tell the pipeline the exchange is over (uvicorn drops messages for a lost connection),
        # so it does not try to end an unfinished response with a 500.
        await send({"type": "http.response.body", "body": b"", "more_body": False})
