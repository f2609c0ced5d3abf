"""The session chat stream (`POST /api/sessions/{id}/chat/stream`): upstream's events of one turn.

`run.started` and `message.started`; per reply piece `assistant.delta` (empty ones dropped,
as upstream does), per tool run `tool.started`/`tool.completed`/`tool.failed`, per model
call's thinking `tool.progress` of the `_thinking` tool; then `assistant.completed` and
`run.completed` (or `error`, or, when a stop ended it, an interrupted `assistant.completed`
and `run.cancelled`); last `done`. Each payload gets, after its own fields, the path
`session_id` (unless it has one), `run_id`, `seq` (1, 2, … in creation order) and `ts`.
The events are JSON in UTF-8. What a release adds comes through the turn (the `runtime`
block) and the stream's run (`StreamRun`: 0.20+ registers it, so status, stop and steer
reach it by its `run_id`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hermes_server.agents.base import Delta, Progress, ToolEvent
from hermes_server.chat.runs import Runs
from hermes_server.chat.stream import Encoder, EventSink, StreamEvent
from hermes_server.chat.stream_runs import StreamRun, StreamRuns
from hermes_server.chat.turn import ChatTurn, TurnContext, TurnOutcome


def with_runtime(payload: dict[str, Any], turn: ChatTurn) -> dict[str, Any]:
    """`payload` with the turn's `runtime` block last, when the release reports one."""
    if turn.runtime is not None:
        payload["runtime"] = turn.runtime
    return payload


class SessionStream(Encoder):
    """The events of one streamed session turn, made as they happen. Once the client is gone,
    events are still numbered but no longer queued (the sink drops them)."""

    def __init__(self, ctx: TurnContext, turn: ChatTurn, sink: EventSink, stream_runs: StreamRuns,
                 runs: Runs) -> None:
        self.ctx = ctx
        self.sink = sink
        self.run_id = f"run_{ctx.ids.hex(32)}"
        self.message_id = f"msg_{ctx.ids.hex(32)}"
        self.run: StreamRun = stream_runs.start(runs, self.run_id, turn.session_id, ctx.settings.model_name)
        # The turn the stream runs: the run's stop reaches it.
        self.turn = dataclasses.replace(turn, stop=self.run.stop)
        self.subject = f"session {turn.session_id!r}"
        self.seq = 0
        # The text streamed so far (what a stopped turn's `assistant.completed` carries).
        self.streamed: list[str] = []

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        self.seq += 1
        payload.setdefault("session_id", self.turn.session_id)
        payload.setdefault("run_id", self.run_id)
        payload.setdefault("seq", self.seq)
        payload.setdefault("ts", self.ctx.clock.now())
        self.sink.put(StreamEvent(payload, name))

    def opening(self) -> None:
        self.emit("run.started", with_runtime({"user_message": {"role": "user", "content": self.turn.user_message}},
                                              self.turn))
        self.emit("message.started", {"message": {"id": self.message_id, "role": "assistant"}})

    def delta(self, event: Delta) -> None:
        self.streamed.append(event.text)
        if event.text:
            self.emit("assistant.delta", {"message_id": self.message_id, "delta": event.text})

    def tool(self, event: ToolEvent) -> None:
        started = event.kind == "started"
        self.emit(f"tool.{event.kind}", {
            "message_id": self.message_id,
            "tool_name": event.tool_name,
            "preview": event.preview if started else None,
            "args": event.args if started else None,
        })

    def progress(self, event: Progress) -> None:
        self.emit("tool.progress", {"message_id": self.message_id, "tool_name": "_thinking", "delta": event.text or ""})

    async def completed(self, outcome: TurnOutcome) -> None:
        run, turn = self.run, self.turn
        steer = {"pending_steer": run.pending_steer} if run.pending_steer else {}
        self.emit("assistant.completed", with_runtime({
            "session_id": outcome.session_id,
            "message_id": self.message_id,
            "content": outcome.final_text,
            "completed": True,
            "partial": False,
            "interrupted": False,
        }, turn))
        self.emit("run.completed", {**with_runtime({
            "session_id": outcome.session_id,
            "message_id": self.message_id,
            "completed": True,
            "messages": outcome.messages,
            "usage": outcome.usage.public(),
        }, turn), **steer})
        run.completed(outcome.final_text, outcome.usage.public(), steer)

    async def failed(self, error: str, exc: Exception) -> None:
        self.emit("error", {"message": error})
        self.run.failed(error)

    async def stopped(self) -> None:
        """A stop ended the turn with `run.cancelled` (docs/differences.md)."""
        self.emit("assistant.completed", with_runtime({
            "message_id": self.message_id, "content": "".join(self.streamed), "completed": False,
            "partial": bool(self.streamed), "interrupted": True}, self.turn))
        self.emit("run.cancelled", {"message_id": self.message_id})
        self.run.cancelled()

    def closing(self) -> None:
        self.emit("done", {})
        self.sink.close()
        self.run.ended()
