"""A streamed Responses API turn (`POST /v1/responses` with `stream: true`): upstream's event sequence.

`response.created`; per tool run `response.output_item.added`/`.done` of its
`function_call` and then of its `function_call_output`; at the first text the message
item's `response.output_item.added` and its `response.content_part.added`, then text
deltas batched per 50 ms window (a tool event flushes the batch first); at the end
`response.output_text.done`, `response.content_part.done` and the message's
`response.output_item.done`; last `response.completed` (or `response.failed`). Every
payload ends with its `sequence_number`.

0.19.0 sends no `content_part` events, so a client that builds the message from the
stream, as the Responses protocol lets it (the `openai` SDK's `responses.stream()`), has no
part for the first delta to land in and fails; and its `response.completed` lists each
function call without the `id` its streamed item had, which that client takes for a changed
item. hermes-server sends the events and the ids unless told to answer as 0.19.0
(`upstream_events`; docs/differences.md, D10).

The turn runs in a task the server owns and is stored when it ends, whether or not
its client is still reading (upstream interrupts the agent instead and stores an
`incomplete` snapshot; docs/differences.md, D9).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from hermes_server.agents.base import Delta, ToolEvent
from hermes_server.chat.stream import Encoder, EventSink, StreamEvent
from hermes_server.chat.turn import TurnContext, TurnOutcome
from hermes_server.domain.response_input import compact_item, message_item
from hermes_server.domain.usage import Usage


class ResponseKeeper(Protocol):
    """What stores the response a stream ends with (chat/responses.py's `ResponseSaver`)."""

    async def completed(self, envelope: dict[str, Any], turn_messages: list[dict[str, Any]]) -> None: ...

    async def failed(self, envelope: dict[str, Any], reply: str) -> None: ...


# Text deltas arriving within this window go out as one `response.output_text.delta`.
DELTA_BATCH_SECONDS = 0.05


class ResponseStream(Encoder):
    """The events of one streamed response, made as they happen; the response it ends with is
    stored by `keeper`."""

    def __init__(self, ctx: TurnContext, sink: EventSink, response_id: str, model: Any, created_at: int,
                 keeper: ResponseKeeper, *, upstream_events: bool = False) -> None:
        self.ctx = ctx
        # 0.19.0's events exactly: no content_part events, no ids in the terminal output (D10).
        self.content_parts = not upstream_events
        self.sink = sink
        self.keeper = keeper
        self.subject = f"response {response_id}"
        self.response_id = response_id
        self.model = model
        self.created_at = created_at
        self.sequence = 0
        self.output_index = 0
        self.items: list[dict[str, Any]] = []  # compact items for the terminal envelope
        self.pending_calls: dict[str, dict[str, Any]] = {}
        self.calls = 0
        self.message_id = f"msg_{ctx.ids.hex(24)}"
        self.message_index: int | None = None
        self.text: list[str] = []
        self.batch: list[str] = []
        self.timer: asyncio.TimerHandle | None = None

    def envelope(self, status: str) -> dict[str, Any]:
        return {"id": self.response_id, "object": "response", "status": status, "created_at": self.created_at,
                "model": self.model}

    def created(self) -> dict[str, Any]:
        """The response as `response.created` shows it (and as it is stored until the turn ends)."""
        return {**self.envelope("in_progress"), "output": []}

    def write(self, kind: str, data: dict[str, Any]) -> None:
        payload = {"type": kind, **data}
        payload.setdefault("sequence_number", self.sequence)
        self.sequence += 1
        self.sink.put(StreamEvent(payload, kind))

    def opening(self) -> None:
        self.write("response.created", {"response": self.created()})

    def _next_index(self) -> int:
        index = self.output_index
        self.output_index += 1
        return index

    # -- text --------------------------------------------------------------

    def _emit_text(self, text: str) -> None:
        if self.message_index is None:
            self.message_index = self._next_index()
            self.write("response.output_item.added", {"output_index": self.message_index, "item": {
                "id": self.message_id, "type": "message", "status": "in_progress", "role": "assistant",
                "content": []}})
            self._content_part("response.content_part.added", "")
        self.text.append(text)
        self.write("response.output_text.delta", {"item_id": self.message_id, "output_index": self.message_index,
                                                  "content_index": 0, "delta": text, "logprobs": []})

    def _content_part(self, kind: str, text: str) -> None:
        """The message's one output_text part opening or closing (D10: not sent as 0.19.0)."""
        if self.content_parts:
            self.write(kind, {"item_id": self.message_id, "output_index": self.message_index, "content_index": 0,
                              "part": {"type": "output_text", "text": text, "annotations": []}})

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.batch:
            combined, self.batch = "".join(self.batch), []
            self._emit_text(combined)

    # -- tools -------------------------------------------------------------

    def _tool_started(self, event: ToolEvent) -> None:
        self.calls += 1
        call_id = event.call_id or f"call_{self.response_id[5:]}_{self.calls}"
        arguments = json.dumps(event.args or {})
        item = {"id": f"fc_{self.ctx.ids.hex(24)}", "type": "function_call", "status": "in_progress",
                "name": event.tool_name or "", "call_id": call_id, "arguments": arguments}
        index = self._next_index()
        self.pending_calls[call_id] = {**item, "output_index": index}
        listed = {"type": "function_call", "name": item["name"], "arguments": arguments, "call_id": call_id}
        if self.content_parts:  # D10: the terminal envelope names the call by the id its streamed item had
            listed["id"] = item["id"]
        self.items.append(listed)
        self.write("response.output_item.added", {"output_index": index, "item": item})

    def _tool_finished(self, event: ToolEvent) -> None:
        pending = self.pending_calls.pop(event.call_id or "", None)
        if pending is None:  # a completion without a start shown: skipped, as upstream does
            return
        index = pending.pop("output_index")
        self.write("response.output_item.done", {"output_index": index, "item": {**pending, "status": "completed"}})
        parts = [{"type": "input_text", "text": event.result or ""}]
        output = {"id": f"fco_{self.ctx.ids.hex(24)}", "type": "function_call_output",
                  "call_id": pending["call_id"], "output": parts, "status": "completed"}
        index = self._next_index()
        self.items.append({"type": "function_call_output", "call_id": pending["call_id"], "output": parts})
        self.write("response.output_item.added", {"output_index": index, "item": output})
        self.write("response.output_item.done", {"output_index": index, "item": output})

    def delta(self, event: Delta) -> None:
        if event.text:
            self.batch.append(event.text)
            if self.timer is None:
                self.timer = asyncio.get_running_loop().call_later(DELTA_BATCH_SECONDS, self.flush)

    def tool(self, event: ToolEvent) -> None:
        self.flush()
        if event.kind == "started":
            self._tool_started(event)
        else:
            self._tool_finished(event)

    # -- the end -----------------------------------------------------------

    def finish_message(self, final_text: str | None) -> str:
        """Flush, add the fallback delta, close the message item; the full text."""
        self.flush()
        if final_text and not self.text:
            self._emit_text(final_text)
        text = "".join(self.text) or (final_text or "")
        if self.message_index is not None:
            self.write("response.output_text.done", {"item_id": self.message_id, "output_index": self.message_index,
                                                     "content_index": 0, "text": text, "logprobs": []})
            self._content_part("response.content_part.done", text)
            self.write("response.output_item.done", {"output_index": self.message_index, "item": {
                "id": self.message_id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}})
        return text

    def terminal(self, status: str, text: str, usage: Usage | None, error: str | None = None) -> dict[str, Any]:
        envelope = self.envelope(status)
        envelope["output"] = [compact_item(item) for item in self.items] + [message_item(text)]
        if error is not None:
            envelope["error"] = {"message": error, "type": "server_error"}
        envelope["usage"] = (usage or Usage()).public()
        return envelope

    async def completed(self, outcome: TurnOutcome) -> None:
        """Close the message, store the response, then `response.completed`."""
        text = self.finish_message(outcome.final_text)
        envelope = self.terminal("completed", text, outcome.usage)
        await self.keeper.completed(envelope, outcome.messages)
        self.write("response.completed", {"response": envelope})

    async def failed(self, error: str, exc: Exception) -> None:
        """Close the message, store the response with the error as its reply when it has none
        (as upstream does), then `response.failed`."""
        text = self.finish_message(None)
        envelope = self.terminal("failed", text or error, None, error)
        await self.keeper.failed(envelope, text or error)
        self.write("response.failed", {"response": envelope})

    def closing(self) -> None:
        self.sink.close()
