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
import logging
from typing import Any, Protocol

from hermes_server.agents.base import AgentEvent, Delta, ToolEvent
from hermes_server.chat import failures
from hermes_server.chat.turn import ChatTurn, TurnContext, run_turn
from hermes_server.domain.response_input import compact_item, message_item
from hermes_server.domain.usage import Usage

log = logging.getLogger("hermes_server.chat")


class EventSink(Protocol):
    """Where the events go (the route frames them as SSE); dropped quietly once the client is gone."""

    def event(self, kind: str, payload: dict[str, Any]) -> None: ...

    def close(self) -> None: ...

# Text deltas arriving within this window go out as one `response.output_text.delta`.
DELTA_BATCH_SECONDS = 0.05


class ResponseStream:
    """The events of one streamed response, framed when they are created."""

    def __init__(self, ctx: TurnContext, sink: EventSink, response_id: str, model: Any, created_at: int,
                 *, upstream_events: bool = False) -> None:
        self.ctx = ctx
        # 0.19.0's events exactly: no content_part events, no ids in the terminal output (D10).
        self.content_parts = not upstream_events
        self.sink = sink
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

    def write(self, kind: str, data: dict[str, Any]) -> None:
        payload = {"type": kind, **data}
        payload.setdefault("sequence_number", self.sequence)
        self.sequence += 1
        self.sink.event(kind, payload)

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

    def agent_event(self, event: AgentEvent) -> None:
        if isinstance(event, Delta):
            if event.text:
                self.batch.append(event.text)
                if self.timer is None:
                    self.timer = asyncio.get_running_loop().call_later(DELTA_BATCH_SECONDS, self.flush)
        elif isinstance(event, ToolEvent):
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
        counts = usage.public() if usage else {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        envelope["usage"] = counts
        return envelope


async def stream_response(ctx: TurnContext, stream: ResponseStream, turn: ChatTurn, history: list[dict[str, Any]],
                          save: Any) -> None:
    """Run the turn, emit the closing events, store the outcome: `save.completed(envelope, history, user
    message, turn messages)` for a finished turn, `save(envelope, stored history)` for a failed one."""
    try:
        outcome = await run_turn(ctx, turn, stream.agent_event)
    except Exception as exc:  # noqa: BLE001 - reported as response.failed, as upstream does
        log.warning("response %s: the agent failed (%s)", stream.response_id, type(exc).__name__)
        error = failures.reported(exc)
        text = stream.finish_message(None)
        envelope = stream.terminal("failed", text or error, None, error)
        await save(envelope, [*history, {"role": "user", "content": turn.user_message},
                              {"role": "assistant", "content": text or error}])
        stream.write("response.failed", {"response": envelope})
    else:
        text = stream.finish_message(outcome.final_text)
        envelope = stream.terminal("completed", text, outcome.usage)
        await save.completed(envelope, history, turn.user_message, outcome.messages)
        stream.write("response.completed", {"response": envelope})
    finally:
        stream.sink.close()
