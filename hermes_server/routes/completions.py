"""POST /v1/chat/completions: OpenAI-style chat over the same sessions as `/api/sessions`.

Clients such as Open WebUI, LobeChat or the `openai` package speak this route only.
Each call is one agent turn, run and persisted by the same runner as session chat
(`chat/turn.py`), so the turn shows up under `/api/sessions/{id}/messages`:

- with `X-Hermes-Session-Id`, the turn continues (or creates) that session and the
  model sees its stored history; the body's earlier messages are ignored;
- without it, the turn goes to a session named after the conversation's system
  text and first user message (`domain/openai_messages.py`), and the model sees
  the body's earlier messages, which are not stored.

Checks run in upstream's order: bearer key, JSON body, `messages`, then the
session-key header, then the session-id header. The non-streaming answer carries
the effective session id (a compression continuation's id when the turn
rotated) in `X-Hermes-Session-Id`; the stream's headers are sent before the turn
runs, so they name the requested id, as upstream's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import crashing_non_object
from hermes_server.api.session_key import session_key
from hermes_server.chat.completion_stream import ChunkStream, completion_id
from hermes_server.chat.replay import Idempotency
from hermes_server.chat.stream import TurnStream
from hermes_server.chat.turn import ChatTurn, answer
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.errors import CompletionFailed
from hermes_server.domain.openai_messages import (
    continued_session_id,
    derived_session_id,
    parse_messages,
    request_bool,
    request_fingerprint,
)
from hermes_server.families import Family
from hermes_server.http.auth import raw_header
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import EventQueue
from hermes_server.openapi.common import AUTH_ERRORS, BODY_ERRORS
from hermes_server.openapi.completions_schemas import COMPLETIONS, COMPONENTS
from hermes_server.routes.common import CHAT_HEADER_FEATURES, idempotency, identity_headers, stream_answer

_NO_KEY_CONTINUATION = (
    "Session continuation requires API key authentication. "
    "Configure API_SERVER_KEY to enable this feature."
)


@dataclass(frozen=True)
class CompletionRequest:
    """A validated request: the turn, and what the answer echoes."""

    turn: ChatTurn
    model: Any  # the body's `model`, echoed as sent (any JSON value), else the served name
    stream: bool
    # The non-streaming answer's replay key (upstream ignores one on a stream).
    idempotency: Idempotency | None


def _continuation(request: Request, api_key: str | None) -> str | None:
    """The `X-Hermes-Session-Id` to continue, or None; 403 without a server key, 400 when unusable."""
    raw = raw_header(request, b"x-hermes-session-id")
    value = raw.decode("utf-8", "surrogateescape") if raw is not None else ""
    if not value.strip():  # blank (Unicode whitespace included) means absent
        return None
    if not api_key:
        raise ApiError(403, _NO_KEY_CONTINUATION)
    return continued_session_id(value)


async def _validated(request: Request, ctx: AppContext) -> CompletionRequest:
    settings = ctx.settings
    # D6: 0.19.0 crashes on a body that is not an object here (the session routes refuse it).
    body = await read_json_object(request, crashing_non_object)
    conversation = parse_messages(body)
    key = session_key(request, settings.api_key)
    continued = _continuation(request, settings.api_key)
    if continued is not None:
        turn = ChatTurn(continued, conversation.user_message, conversation.instruction, key)
    else:
        turn = ChatTurn(derived_session_id(conversation), conversation.user_message, conversation.instruction,
                        key, history=conversation.history)
    return CompletionRequest(
        turn, body.get("model", settings.model_name), request_bool(body.get("stream")),
        idempotency(request, body, request_fingerprint),
    )


async def _complete(ctx: AppContext, req: CompletionRequest) -> Response:
    outcome = await answer(ctx, req.turn, CompletionFailed, req.idempotency)
    return HermesJSONResponse(
        {
            "id": completion_id(ctx.ids),
            "object": "chat.completion",
            "created": int(ctx.now()),
            "model": req.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": outcome.final_text or ""},
                "finish_reason": "stop",
            }],
            "usage": outcome.usage.openai(),
        },
        headers=identity_headers(outcome.session_id, req.turn.session_key),
    )


def _stream(request: Request, ctx: AppContext, req: CompletionRequest) -> Response:
    """The turn as OpenAI chunks (chat/completion_stream.py)."""
    events = EventQueue(ascii_only=True)
    TurnStream.start(ctx, req.turn, ChunkStream(ctx, req.turn, events, req.model))
    return stream_answer(ctx, events, identity_headers(req.turn.session_id, req.turn.session_key))


async def chat_completions(request: Request, ctx: AppContext) -> Response:
    """POST /v1/chat/completions: one agent turn, as a chat.completion or as streamed chunks."""
    with ctx.slots.admit() as admission:  # the run cap, before the body is read
        req = await _validated(request, ctx)
        admission.release()  # the turn's task is spawned next, with nothing awaited between
        if req.stream:
            return _stream(request, ctx, req)
        return await _complete(ctx, req)


def routes() -> list[Route]:
    """POST /v1/chat/completions and what it promises."""
    return [
        Route(route_ids.CHAT_COMPLETIONS, "/v1/chat/completions", {
            "POST": Method(chat_completions, Operation(
                summary="Chat completion (OpenAI)", description=COMPLETIONS,
                responses={200: "OpenAIChatCompletion", 403: "Forbidden", 500: "ServerError",
                           **BODY_ERRORS, **AUTH_ERRORS},
                capability="chat_completions",
                features=("chat_completions", "chat_completions_streaming", *CHAT_HEADER_FEATURES),
                body="OpenAIChatRequest",
                headers=("X-Hermes-Session-Id", "X-Hermes-Session-Key", "Idempotency-Key"),
                effect=Effect.UNSAFE, streams=True)),
        }),
    ]


def family() -> Family:
    """OpenAI-compatible chat as a unit of the app, with the OpenAPI components its route names."""
    return Family("completions", routes(), components=COMPONENTS)
