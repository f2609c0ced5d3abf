"""POST /api/sessions/{id}/chat and /chat/stream: one agent turn, answered as JSON or as SSE.

Both routes validate identically (spec §4.8.2): session-key header, then 503/404 on
the exact path id, then the JSON body, the user message and the system
instruction. The turn itself runs in a task owned by `Services`, never by the
response, so a client that goes away does not stop or undo it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any, AsyncIterator

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from hermes_server.agents.base import AgentEvent, Delta, Progress, ToolEvent
from hermes_server.agents.runner import ChatTurn, TurnOutcome, run_turn
from hermes_server.domain.content import ContentError, extract_user_message, system_instruction
from hermes_server.domain.redact import redact
from hermes_server.domain.titles import scrub_surrogates
from hermes_server.faults import cut_stream
from hermes_server.http.auth import check_bearer, session_key
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError, server_error
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.routes.sessions import existing_session
from hermes_server.services import Services

log = logging.getLogger("hermes_server.chat")

KEEPALIVE_FRAME = b": keepalive\n\n"


async def validated_turn(request: Request, svc: Services) -> ChatTurn:
    """Everything both chat routes check before a turn starts, in upstream's order."""
    check_bearer(request, svc.settings.api_key)
    key = session_key(request, svc.settings.api_key)
    session_id = request.path_params["session_id"]
    await existing_session(svc, session_id)
    body = await read_json_object(request, svc.settings.max_request_bytes)
    try:
        message = extract_user_message(body)
        system = system_instruction(body)
    except ContentError as exc:
        raise ApiError(400, exc.message, exc.code, exc.param) from None
    return ChatTurn(session_id, message, system, key)


def identity_headers(session_id: str, key: str | None) -> dict[str, str]:
    """`X-Hermes-Session-Id`, plus the echoed `X-Hermes-Session-Key` when one was sent."""
    headers = {"X-Hermes-Session-Id": session_id}
    if key:
        headers["X-Hermes-Session-Key"] = key
    return headers


async def session_chat(request: Request, svc: Services) -> Response:
    """POST /api/sessions/{id}/chat: run the turn, answer with its final text and usage."""
    turn = await validated_turn(request, svc)
    task = svc.spawn(run_turn(svc, turn))
    try:
        outcome: TurnOutcome = await asyncio.shield(task)
    except Exception as exc:  # noqa: BLE001 - D5: any agent failure is a 500 envelope
        log.warning("session %r: the agent failed (%s)", turn.session_id, type(exc).__name__)
        raise server_error(str(exc) or "Internal server error") from None
    return HermesJSONResponse(
        {
            "object": "hermes.session.chat.completion",
            "session_id": outcome.session_id,
            "message": {"role": "assistant", "content": outcome.final_text},
            "usage": outcome.usage.public(),
        },
        headers=identity_headers(outcome.session_id, turn.session_key),
    )


class EventStream:
    """The events of one streamed turn, framed when they are created, queued for the response.

    Each payload gets, after its own fields, the path `session_id` (unless it has
    one), `run_id`, `seq` (1, 2, … in creation order) and `ts`. Once the client is
    gone, events are still numbered but no longer queued.
    """

    def __init__(self, svc: Services, session_id: str) -> None:
        self.svc = svc
        self.session_id = session_id
        self.run_id = f"run_{uuid.uuid4().hex}"
        self.message_id = f"msg_{uuid.uuid4().hex}"
        self.seq = 0
        self.listening = True
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        self.seq += 1
        payload.setdefault("session_id", self.session_id)
        payload.setdefault("run_id", self.run_id)
        payload.setdefault("seq", self.seq)
        payload.setdefault("ts", self.svc.now())
        if self.listening:
            text = f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"
            self.queue.put_nowait(scrub_surrogates(text).encode("utf-8"))

    def agent_event(self, event: AgentEvent) -> None:
        """Map an agent event to its SSE event; empty deltas are dropped, as upstream does."""
        if isinstance(event, Delta):
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

    def close(self) -> None:
        if self.listening:
            self.queue.put_nowait(None)

    async def frames(self, keepalive_seconds: float) -> AsyncIterator[bytes]:
        """Queued frames until the end, with `: keepalive` after each idle interval.

        The idle timer restarts after every event and every keepalive (upstream's
        rule), which sse-starlette's fixed-period ping cannot express.
        """
        try:
            while True:
                try:
                    frame = await asyncio.wait_for(self.queue.get(), keepalive_seconds)
                except TimeoutError:
                    yield KEEPALIVE_FRAME
                    continue
                if frame is None:
                    return
                yield frame
        finally:
            self.listening = False


async def _stream_turn(svc: Services, turn: ChatTurn, events: EventStream) -> None:
    """Run the turn, then queue its completion (or `error`) and always `done`."""
    try:
        outcome = await run_turn(svc, turn, events.agent_event)
    except Exception as exc:  # noqa: BLE001 - reported to the client as an `error` event
        log.warning("session %r: the agent failed (%s)", turn.session_id, type(exc).__name__)
        events.emit("error", {"message": redact(str(exc))})
    else:
        events.emit("assistant.completed", {
            "session_id": outcome.session_id,
            "message_id": events.message_id,
            "content": outcome.final_text,
            "completed": True,
            "partial": False,
            "interrupted": False,
        })
        events.emit("run.completed", {
            "session_id": outcome.session_id,
            "message_id": events.message_id,
            "completed": True,
            "messages": outcome.messages,
            "usage": outcome.usage.public(),
        })
    finally:
        events.emit("done", {})
        events.close()


def sse_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    """Upstream's stream headers, exactly: no charset, no Connection, no security headers."""
    fixed = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no", **headers}
    return [(k.lower().encode("latin-1"), v.encode("utf-8", "surrogateescape")) for k, v in fixed.items()]


async def session_chat_stream(request: Request, svc: Services) -> Response:
    """POST /api/sessions/{id}/chat/stream: the turn as server-sent events."""
    turn = await validated_turn(request, svc)
    events = EventStream(svc, turn.session_id)
    events.emit("run.started", {"user_message": {"role": "user", "content": turn.user_message}})
    events.emit("message.started", {"message": {"id": events.message_id, "role": "assistant"}})
    svc.spawn(_stream_turn(svc, turn, events))
    # `cut_stream` lets an injected fault drop the connection after N events (faults.py).
    response = EventSourceResponse(cut_stream(svc, events.frames(svc.settings.keepalive_seconds)), ping=0)
    response.raw_headers = sse_headers(identity_headers(turn.session_id, turn.session_key))
    return response
