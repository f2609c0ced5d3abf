"""The default agent: offline, deterministic, instant.

The reply is a pure function of the user text and the history length, so a
connector test can assert it: `ECHO-REPLY to: <text> [n=<history + 1>]`, where
the text has its whitespace collapsed and is cut at 200 characters, and `n`
counts the messages the model would see besides the system prompt (the
oracle's mock model uses the same shape). Streamed word by word, then reported as the
turn's one `_thinking` progress, as upstream's agent reports the content of its model call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from hermes_server.agents.base import (
    AgentEvent,
    Delta,
    TurnRequest,
    TurnResult,
    assistant_message,
    estimated_usage,
    thinking,
    word_deltas,
)
from hermes_server.domain.content import message_text

MAX_QUOTED = 200


def echo_reply(turn: TurnRequest) -> str:
    """The reply text for a turn."""
    quoted = " ".join(message_text(turn.user_message).split())[:MAX_QUOTED]
    return f"ECHO-REPLY to: {quoted} [n={len(turn.history) + 1}]"


class EchoAgent:
    """See the module docstring."""

    def __init__(self, model: str) -> None:
        self.model = model

    async def run(self, turn: TurnRequest) -> AsyncIterator[AgentEvent]:
        reply = echo_reply(turn)
        for piece in word_deltas(reply):
            yield Delta(piece)
        for event in thinking(reply):
            yield event
        yield TurnResult(reply, estimated_usage(len(turn.history), reply), [assistant_message(reply)])

    async def aclose(self) -> None:
        return None
