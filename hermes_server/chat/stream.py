"""A turn streamed to its client: the events each protocol makes of it, and one way to run it.

Four protocols stream what happens in a turn: the session chat stream
(chat/session_stream.py), chat completions' chunks (chat/completion_stream.py), the
Responses API's events (chat/response_stream.py) and a run's events (chat/runs.py). Each
is an `Encoder`, told in order what happens: the stream's opening, each agent event (told
apart here, once, by its type: a reply delta, a tool run, a model call's thinking), how
the turn ended (its outcome, a failure, a stop), and the close. It makes its protocol's
events of them (`StreamEvent`) and puts them on its sink, which the route gives it:
http/sse.py frames them and the response sends them, so framing stays apart from transport.

`TurnStream.start` runs a turn into an encoder in a task the server owns
(chat/tasks.py), so a client that leaves neither stops nor undoes it. A run's turn has
a driver of its own (chat/runs.py `run_in_background`: a run's end also settles its status).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_server.agents.base import AgentEvent, Delta, Progress, ToolEvent
from hermes_server.chat import failures
from hermes_server.chat.interrupt import TurnStopped
from hermes_server.chat.turn import ChatTurn, TurnContext, TurnOutcome, run_turn

log = logging.getLogger("hermes_server.chat")


@dataclass(frozen=True)
class StreamEvent:
    """One protocol event: `event: <name>` (None: an unnamed event) and one `data:` line of
    `data` as JSON, or as it is when `literal` (chat completions' `[DONE]`)."""

    data: Any
    name: str | None = None
    literal: bool = False


class EventSink(Protocol):
    """Where an encoder's events go, in order (a route's queue; dropped once the client is gone)."""

    def put(self, event: StreamEvent) -> None: ...

    def close(self) -> None: ...


class Encoder:
    """How one protocol tells what happens in a turn. This base sends nothing; each protocol
    overrides what it sends something for."""

    # Who the log line of a failed turn names ("session 'x'", "response resp_…").
    subject = "turn"

    def opening(self) -> None:
        """The stream begins: before the turn starts, before the client reads anything."""

    def event(self, event: AgentEvent) -> None:
        """One agent event, handed to the method for its type."""
        if isinstance(event, Delta):
            self.delta(event)
        elif isinstance(event, ToolEvent):
            self.tool(event)
        elif isinstance(event, Progress):
            self.progress(event)

    def delta(self, event: Delta) -> None:
        """A piece of the reply text."""

    def tool(self, event: ToolEvent) -> None:
        """A tool run started, completed or failed."""

    def progress(self, event: Progress) -> None:
        """A model call ended with text (its "thinking")."""

    async def completed(self, outcome: TurnOutcome) -> None:
        """The turn answered."""

    async def failed(self, error: str, exc: Exception) -> None:
        """The agent raised `exc`; `error` is what the stream reports of it (chat/failures.py: its
        text, redacted, when meant for the client)."""

    async def stopped(self) -> None:
        """A stop ended the turn (`POST /v1/runs/{id}/stop` on the stream's run)."""

    def closing(self) -> None:
        """The stream ends, however the turn ended."""


class TurnStream:
    """One turn streamed through an encoder."""

    @staticmethod
    def start(ctx: TurnContext, turn: ChatTurn, encoder: Encoder) -> asyncio.Task[None]:
        """Open the stream and start the turn in a task the server owns (nothing is awaited
        between, so an admission ends as the turn gets its task)."""
        encoder.opening()
        return ctx.turns.spawn(_run(ctx, turn, encoder))


async def _run(ctx: TurnContext, turn: ChatTurn, encoder: Encoder) -> None:
    """The turn, each agent event to the encoder as it happens, then how it ended, then the close."""
    try:
        outcome = await run_turn(ctx, turn, encoder.event)
    except TurnStopped:
        await encoder.stopped()
    except Exception as exc:  # noqa: BLE001 - reported in the stream, as upstream does
        log.warning("%s: the agent failed (%s)", encoder.subject, type(exc).__name__)
        await encoder.failed(failures.reported(exc), exc)
    else:
        await encoder.completed(outcome)
    finally:
        encoder.closing()
