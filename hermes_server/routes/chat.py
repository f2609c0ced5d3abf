"""POST /api/sessions/{id}/chat and /chat/stream: one agent turn, answered as JSON or as SSE.

Both routes validate identically: session-key header, then 503/404 on the exact
path id, then the JSON body, the user message and the system instruction. The turn
itself runs in a task the server owns, never the response, so a client that goes
away does not stop or undo it. What a release adds (0.20.4's `runtime` block, the stream's
`run_id` naming a run that `GET /v1/runs/{run_id}`, stop and steer reach) comes through the
strategies of `ctx.behaviour`.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.session_key import session_key
from hermes_server.chat.session_stream import SessionStream, with_runtime
from hermes_server.chat.stream import TurnStream
from hermes_server.chat.turn import ChatTurn, answer
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.content import extract_user_message, system_instruction
from hermes_server.families import Family
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import EventQueue
from hermes_server.openapi import chat_schemas as schemas
from hermes_server.openapi.common import BODY_ERRORS, SESSION_ERRORS
from hermes_server.routes.common import (
    CHAT_HEADER_FEATURES,
    existing_session,
    identity_headers,
    inventory,
    stream_answer,
)


async def validated_turn(request: Request, ctx: AppContext) -> ChatTurn:
    """Everything both chat routes check before a turn starts, in upstream's order."""
    key = session_key(request, ctx.settings.api_key)
    session_id = request.path_params["session_id"]
    row = await existing_session(ctx, session_id)
    body = await read_json_object(request)
    message = extract_user_message(body)
    system = system_instruction(body)
    runtime = ctx.behaviour.turn_runtime(row.get("model_config"), body, inventory(ctx))
    return ChatTurn(session_id, message, system, key, runtime=runtime)


async def session_chat(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/chat: run the turn, answer with its final text and usage."""
    turn = await validated_turn(request, ctx)
    outcome = await answer(ctx, turn)
    return HermesJSONResponse(
        with_runtime({
            "object": "hermes.session.chat.completion",
            "session_id": outcome.session_id,
            "message": {"role": "assistant", "content": outcome.final_text},
            "usage": outcome.usage.public(),
        }, turn),
        headers=identity_headers(outcome.session_id, turn.session_key),
    )


async def session_chat_stream(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/chat/stream: the turn as server-sent events (chat/session_stream.py)."""
    turn = await validated_turn(request, ctx)
    events = EventQueue(ascii_only=False)
    stream = SessionStream(ctx, turn, events, ctx.behaviour.stream_runs, ctx.runs)
    stream.run.attach(TurnStream.start(ctx, stream.turn, stream))
    return stream_answer(ctx, events, identity_headers(turn.session_id, turn.session_key))


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
