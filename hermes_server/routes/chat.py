"""POST /api/sessions/{id}/chat and /chat/stream: one agent turn, answered as JSON or as SSE.

Both routes validate identically: session-key header, then 503/404 on the exact
path id, then the JSON body, the user message and the system instruction. The turn
itself runs in a task the server owns, never the response, so a client that goes
away does not stop or undo it. What a release adds (0.20.4's `runtime` block, the stream's
`run_id` naming a run that `GET /v1/runs/{run_id}`, stop and steer reach) comes through the
strategies of `ctx.behaviour`.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.agents.base import AgentEvent, Delta, Progress, ToolEvent
from hermes_server.api.session_key import session_key
from hermes_server.chat import failures
from hermes_server.chat.interrupt import TurnStopped
from hermes_server.chat.stream_runs import StreamRun
from hermes_server.chat.turn import ChatTurn, answer, run_turn
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.content import extract_user_message, system_instruction
from hermes_server.families import Family
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import EventQueue, event_frame, sse_response
from hermes_server.openapi import chat_schemas as schemas
from hermes_server.openapi.common import BODY_ERRORS, SESSION_ERRORS
from hermes_server.routes.common import CHAT_HEADER_FEATURES, existing_session, identity_headers, inventory

log = logging.getLogger("hermes_server.chat")

async def validated_turn(request: Request, ctx: AppContext) -> ChatTurn:
    """Everything both chat routes check before a turn starts, in upstream's order."""
    key = session_key(request, ctx.settings.api_key)
    session_id = request.path_params["session_id"]
    row = await existing_session(ctx, session_id)
    body = await read_json_object(request)
    message = extract_user_message(body)
    system = system_instruction(body)
    runtime = ctx.behaviour.turn_runtime(row.get("model_config"), body, inventory(ctx))
    return ChatTurn(session_id, message, system, key, origin=request.scope, runtime=runtime)


def _with_runtime(payload: dict[str, Any], turn: ChatTurn) -> dict[str, Any]:
    """`payload` with the turn's `runtime` block last, when the profile reports one."""
    if turn.runtime is not None:
        payload["runtime"] = turn.runtime
    return payload


async def session_chat(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/chat: run the turn, answer with its final text and usage."""
    turn = await validated_turn(request, ctx)
    outcome = await answer(ctx, turn)
    return HermesJSONResponse(
        _with_runtime({
            "object": "hermes.session.chat.completion",
            "session_id": outcome.session_id,
            "message": {"role": "assistant", "content": outcome.final_text},
            "usage": outcome.usage.public(),
        }, turn),
        headers=identity_headers(outcome.session_id, turn.session_key),
    )


class SessionEvents:
    """The events of one streamed session turn, framed when they are created.

    Each payload gets, after its own fields, the path `session_id` (unless it has
    one), `run_id`, `seq` (1, 2, … in creation order) and `ts`. Once the client is
    gone, events are still numbered but no longer queued.
    """

    def __init__(self, ctx: AppContext, session_id: str) -> None:
        self.ctx = ctx
        self.session_id = session_id
        self.run_id = f"run_{ctx.ids.hex(32)}"
        self.message_id = f"msg_{ctx.ids.hex(32)}"
        self.seq = 0
        self.queue = EventQueue()
        # The text streamed so far (what a stopped turn's `assistant.completed` carries).
        self.streamed: list[str] = []

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        self.seq += 1
        payload.setdefault("session_id", self.session_id)
        payload.setdefault("run_id", self.run_id)
        payload.setdefault("seq", self.seq)
        payload.setdefault("ts", self.ctx.now())
        if self.queue.listening:
            self.queue.put(event_frame(name, payload))

    def agent_event(self, event: AgentEvent) -> None:
        """Map an agent event to its SSE event; empty deltas are dropped, as upstream does."""
        if isinstance(event, Delta):
            self.streamed.append(event.text)
            if event.text:
                self.emit("assistant.delta", {"message_id": self.message_id, "delta": event.text})
        elif isinstance(event, ToolEvent):
            started = event.kind == "started"
            self.emit(f"tool.{event.kind}", {
                "message_id": self.message_id,
                "tool_name": event.tool_name,
                "preview": event.preview if started else None,
                "args": event.args if started else None,
            })
        elif isinstance(event, Progress):
            self.emit("tool.progress", {
                "message_id": self.message_id, "tool_name": "_thinking", "delta": event.text or "",
            })


async def _stream_turn(ctx: AppContext, turn: ChatTurn, events: SessionEvents, run: StreamRun) -> None:
    """Run the turn, then queue its completion (or `error`) and always `done`; the stream's run
    follows (and a stop ends the turn with `run.cancelled`, docs/differences.md)."""
    try:
        outcome = await run_turn(ctx, turn, events.agent_event)
    except TurnStopped:
        events.emit("assistant.completed", _with_runtime({
            "message_id": events.message_id, "content": "".join(events.streamed), "completed": False,
            "partial": bool(events.streamed), "interrupted": True}, turn))
        events.emit("run.cancelled", {"message_id": events.message_id})
        run.cancelled()
    except Exception as exc:  # noqa: BLE001 - reported to the client as an `error` event
        log.warning("session %r: the agent failed (%s)", turn.session_id, type(exc).__name__)
        error = failures.reported(exc)
        events.emit("error", {"message": error})
        run.failed(error)
    else:
        steer = {"pending_steer": run.pending_steer} if run.pending_steer else {}
        events.emit("assistant.completed", _with_runtime({
            "session_id": outcome.session_id,
            "message_id": events.message_id,
            "content": outcome.final_text,
            "completed": True,
            "partial": False,
            "interrupted": False,
        }, turn))
        events.emit("run.completed", {**_with_runtime({
            "session_id": outcome.session_id,
            "message_id": events.message_id,
            "completed": True,
            "messages": outcome.messages,
            "usage": outcome.usage.public(),
        }, turn), **steer})
        run.completed(outcome.final_text, outcome.usage.public(), steer)
    finally:
        events.emit("done", {})
        events.queue.close()
        run.ended()


async def session_chat_stream(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/chat/stream: the turn as server-sent events."""
    turn = await validated_turn(request, ctx)
    events = SessionEvents(ctx, turn.session_id)
    run = ctx.behaviour.stream_runs.start(ctx.runs, events.run_id, turn.session_id, ctx.settings.model_name)
    turn = dataclasses.replace(turn, stop=run.stop)
    events.emit("run.started", _with_runtime({"user_message": {"role": "user", "content": turn.user_message}}, turn))
    events.emit("message.started", {"message": {"id": events.message_id, "role": "assistant"}})
    run.attach(ctx.turns.spawn(_stream_turn(ctx, turn, events, run)))
    # Test control may cut the stream after N events (a fault's hook; nothing by default).
    frames = ctx.hooks.stream(request.scope, events.queue.frames(ctx.settings.keepalive_seconds))
    return sse_response(frames, identity_headers(turn.session_id, turn.session_key))


def routes() -> list[Route]:
    """The two session chat routes and what they promise."""
    return [
        Route(route_ids.SESSION_CHAT, "/api/sessions/{session_id}/chat", {
            "POST": Method(session_chat, Operation(
                summary="Chat with a session", description=schemas.SESSION_CHAT,
                responses={200: "ChatCompletion", 403: "Forbidden", 500: "ServerError", **BODY_ERRORS,
                           400: "ChatBadRequest", **SESSION_ERRORS},
                capability="session_chat", features=("session_chat", *CHAT_HEADER_FEATURES), body="ChatRequest",
                headers=("X-Hermes-Session-Key",), effect=Effect.UNSAFE | Effect.WRITE | Effect.TURN,
                documented="session_chat")),
        }),
        Route(route_ids.SESSION_CHAT_STREAM, "/api/sessions/{session_id}/chat/stream", {
            "POST": Method(session_chat_stream, Operation(
                summary="Chat with a session, streamed", description=schemas.SESSION_CHAT_STREAM,
                responses={200: "ChatStream", 403: "Forbidden", **BODY_ERRORS, 400: "ChatBadRequest", **SESSION_ERRORS},
                capability="session_chat_stream",
                features=("session_chat_streaming", "tool_progress_events", *CHAT_HEADER_FEATURES),
                body="ChatRequest", headers=("X-Hermes-Session-Key",),
                effect=Effect.UNSAFE | Effect.WRITE | Effect.TURN, streams=True, documented="session_chat_stream")),
        }),
    ]


def family() -> Family:
    """Session chat as a unit of the app, with the OpenAPI components its routes name."""
    return Family("chat", routes(), components=schemas.COMPONENTS)
