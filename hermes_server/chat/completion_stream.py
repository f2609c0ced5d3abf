"""A streamed chat completion (`POST /v1/chat/completions` with `stream: true`): OpenAI's chunks.

The first chunk names the role; reply text goes out as content chunks; tool runs as
`hermes.tool.progress` events (running, then completed); the end is a finish chunk (`stop`,
or `error` with upstream's failure fields) and `[DONE]`. Unnamed `data:` lines and the
tool events are ASCII-escaped JSON, as upstream writes them.
"""

from __future__ import annotations

from typing import Any

from hermes_server.agents.base import Delta, ToolEvent
from hermes_server.chat import failures
from hermes_server.chat.stream import Encoder, EventSink, StreamEvent
from hermes_server.chat.turn import ChatTurn, TurnContext, TurnOutcome
from hermes_server.domain.ids import IdSource
from hermes_server.domain.usage import Usage

DONE = StreamEvent("[DONE]", literal=True)
# The emoji upstream shows for a tool its registry does not know.
DEFAULT_TOOL_EMOJI = "\u26a1"


def completion_id(ids: IdSource) -> str:
    """A new `chatcmpl-…` id."""
    return f"chatcmpl-{ids.hex(29)}"


class ChunkStream(Encoder):
    """The chunks of one streamed completion.

    As upstream: a tool without a call id or with a `_` name is not shown, a completion is
    shown only for a start that was, and reasoning is not streamed.
    """

    def __init__(self, ctx: TurnContext, turn: ChatTurn, sink: EventSink, model: Any) -> None:
        self.sink = sink
        self.completion_id = completion_id(ctx.ids)
        self.created = int(ctx.clock.now())
        self.model = model
        self.subject = f"session {turn.session_id!r}"
        self.open_tools: dict[str, str] = {}

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> None:
        self.sink.put(StreamEvent({
            "id": self.completion_id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            **extra,
        }))

    def _tool_progress(self, payload: dict[str, Any]) -> None:
        self.sink.put(StreamEvent(payload, "hermes.tool.progress"))

    def opening(self) -> None:
        self.chunk({"role": "assistant"})

    def delta(self, event: Delta) -> None:
        self.chunk({"content": event.text})

    def tool(self, event: ToolEvent) -> None:
        if not event.call_id or (event.tool_name or "").startswith("_"):
            return
        name = event.tool_name or ""
        if event.kind == "started":
            self.open_tools[event.call_id] = name
            self._tool_progress({"tool": name, "emoji": DEFAULT_TOOL_EMOJI, "label": event.preview or name,
                                 "toolCallId": event.call_id, "status": "running"})
        elif self.open_tools.pop(event.call_id, None) is not None:
            self._tool_progress({"tool": name, "toolCallId": event.call_id, "status": "completed"})

    async def completed(self, outcome: TurnOutcome) -> None:
        self.chunk({}, "stop", usage=outcome.usage.openai())

    async def failed(self, error: str, exc: Exception) -> None:
        self.chunk({}, "error", usage=Usage().openai(), error={"message": error, "type": failures.kind(exc)},
                   hermes={"completed": True, "partial": False, "failed": True, "error": error,
                           "error_code": "agent_error"})

    def closing(self) -> None:
        self.sink.put(DONE)
        self.sink.close()
