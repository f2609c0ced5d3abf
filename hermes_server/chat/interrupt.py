"""Holding a turn (`--agent-delay`) and stopping it mid-turn (`POST /v1/runs/{id}/stop`).

Both wrap the agent's event stream, so they work the same for every agent: the hold
is a pause before the agent's first event, inside the turn (its user row is already
written, the turn counts against the run cap, a stop ends it), and a stop ends the
stream within `STOP_LATENCY`, wherever the agent is (the hold, a slow model call, a
scripted sleep).
The one exception is an agent waiting for a tool approval: upstream's stop answers
that approval with a deny first, so the agent reports the refused tool before the turn
ends; here too the stream is let run until that tool event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hermes_server.agents.base import AgentEvent

# How long a stopped turn waiting for an approval may take to report the refused tool.
DENIED_TOOL_GRACE = 1.0
# How long a stopped turn stays `stopping` before it ends: upstream's agent notices an
# interrupt within about this long, so a client's repeated stop still finds the run live.
STOP_LATENCY = 0.2


class TurnStopped(Exception):
    """The turn was stopped before the agent finished it."""


class Stop:
    """A stop request for one turn; `approval_denied` says the stop answered an approval."""

    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.approval_denied = False

    def set(self, *, approval_denied: bool = False) -> None:
        self.approval_denied = self.approval_denied or approval_denied
        self.requested.set()

    def is_set(self) -> bool:
        return self.requested.is_set()


async def held(delay: float, events: AsyncIterator[AgentEvent]) -> AsyncIterator[AgentEvent]:
    """The agent's events, after `delay` seconds (none: unchanged)."""
    if delay > 0:
        await asyncio.sleep(delay)
    async for event in events:
        yield event


async def _next(iterator: AsyncIterator[AgentEvent]) -> AgentEvent:
    return await iterator.__anext__()


async def stoppable(events: AsyncIterator[AgentEvent], stop: Stop | None) -> AsyncIterator[AgentEvent]:
    """`events` until `stop` is set, then `TurnStopped` (after the refused tool's event, see above)."""
    if stop is None:
        async for event in events:
            yield event
        return
    iterator = events.__aiter__()
    waiter = asyncio.ensure_future(stop.requested.wait())
    step: asyncio.Future[AgentEvent] | None = None
    try:
        while True:
            if stop.is_set():
                raise TurnStopped()
            step = asyncio.ensure_future(_next(iterator))
            await asyncio.wait({step, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                await asyncio.wait({step}, timeout=DENIED_TOOL_GRACE if stop.approval_denied else STOP_LATENCY)
            if not step.done():
                step.cancel()
                await asyncio.gather(step, return_exceptions=True)
                raise TurnStopped()
            try:
                event = step.result()
            except StopAsyncIteration:
                return
            yield event
    finally:
        waiter.cancel()
        # A cancelled turn (a shutdown past its drain) leaves the agent's step running inside the
        # iterator: it must end before the iterator is closed, or closing it raises "aclose():
        # asynchronous generator is already running" in place of the cancellation.
        if step is not None and not step.done():
            step.cancel()
            await asyncio.gather(step, return_exceptions=True)
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
