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

import logging
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.agents.base import AgentEvent, Delta, ToolEvent
from hermes_server.api.errors import crashing_non_object
from hermes_server.api.session_key import session_key
from hermes_server.chat.replay import Idempotency
from hermes_server.chat.turn import ChatTurn, answer, run_turn
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
from hermes_server.domain.redact import redact
from hermes_server.domain.usage import Usage
from hermes_server.families import Family
from hermes_server.http.auth import raw_header
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import EventQueue, data_frame, event_frame, sse_response
from hermes_server.openapi.common import AUTH_ERRORS, BODY_ERRORS
from hermes_server.openapi.completions_schemas import COMPONENTS
from hermes_server.routes.common import CHAT_HEADER_FEATURES, idempotency, identity_headers

log = logging.getLogger("hermes_server.chat")

DONE_FRAME = b"data: [DONE]\n\n"
# The emoji upstream shows for a tool its registry does not know.
DEFAULT_TOOL_EMOJI = "\u26a1"
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
        turn = ChatTurn(continued, conversation.user_message, conversation.instruction, key,
                        origin=request.scope)
    else:
        turn = ChatTurn(derived_session_id(conversation), conversation.user_message, conversation.instruction,
                        key, history=conversation.history, origin=request.scope)
    return CompletionRequest(
        turn, body.get("model", settings.model_name), request_bool(body.get("stream")),
        idempotency(request, body, request_fingerprint),
    )


def _usage(usage: Usage | None) -> dict[str, int]:
    counts = usage.public() if usage else {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    return {
        "prompt_tokens": counts["input_tokens"],
        "completion_tokens": counts["output_tokens"],
        "total_tokens": counts["total_tokens"],
    }


def _completion_id(ctx: AppContext) -> str:
    return f"chatcmpl-{ctx.ids.hex(29)}"


# -- the non-streaming answer ---------------------------------------------------


async def _complete(ctx: AppContext, req: CompletionRequest) -> Response:
    outcome = await answer(ctx, req.turn, CompletionFailed, req.idempotency)
    return HermesJSONResponse(
        {
            "id": _completion_id(ctx),
            "object": "chat.completion",
            "created": int(ctx.now()),
            "model": req.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": outcome.final_text or ""},
                "finish_reason": "stop",
            }],
            "usage": _usage(outcome.usage),
        },
        headers=identity_headers(outcome.session_id, req.turn.session_key),
    )


# -- the streaming answer -------------------------------------------------------


class ChunkStream:
    """The frames of one streamed completion: OpenAI chunks, tool progress, `[DONE]`.

    The same queue, idle keepalive and disconnect handling as session chat; only the
    framing differs (`data:` lines, ASCII-escaped JSON as upstream writes them).
    """

    def __init__(self, ctx: AppContext, model: Any) -> None:
        self.completion_id = _completion_id(ctx)
        self.created = int(ctx.now())
        self.model = model
        self.open_tools: dict[str, str] = {}
        self.queue = EventQueue()

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> None:
        payload = {
            "id": self.completion_id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            **extra,
        }
        self.queue.put(data_frame(payload))

    def tool_progress(self, payload: dict[str, Any]) -> None:
        self.queue.put(event_frame("hermes.tool.progress", payload, ascii_only=True))

    def agent_event(self, event: AgentEvent) -> None:
        """Reply text as content chunks; tool runs as `hermes.tool.progress` (running, then completed).

        As upstream: a tool without a call id or with a `_` name is not shown, a
        completion is shown only for a start that was, and reasoning is not streamed.
        """
        if isinstance(event, Delta):
            self.chunk({"content": event.text})
        elif isinstance(event, ToolEvent) and event.call_id and not (event.tool_name or "").startswith("_"):
            name = event.tool_name or ""
            if event.kind == "started":
                self.open_tools[event.call_id] = name
                self.tool_progress({
                    "tool": name, "emoji": DEFAULT_TOOL_EMOJI, "label": event.preview or name,
                    "toolCallId": event.call_id, "status": "running",
                })
            elif self.open_tools.pop(event.call_id, None) is not None:
                self.tool_progress({"tool": name, "toolCallId": event.call_id, "status": "completed"})


async def _stream_turn(ctx: AppContext, turn: ChatTurn, stream: ChunkStream) -> None:
    """Run the turn, then the finish chunk (`stop`, or `error` with upstream's failure fields) and `[DONE]`."""
    try:
        outcome = await run_turn(ctx, turn, stream.agent_event)
    except Exception as exc:  # noqa: BLE001 - reported in the finish chunk, as upstream does
        log.warning("session %r: the agent failed (%s)", turn.session_id, type(exc).__name__)
        message = redact(str(exc))
        stream.chunk({}, "error", usage=_usage(None),
                     error={"message": message, "type": type(exc).__name__},
                     hermes={"completed": True, "partial": False, "failed": True, "error": message,
                             "error_code": "agent_error"})
    else:
        stream.chunk({}, "stop", usage=_usage(outcome.usage))
    finally:
        stream.queue.put(DONE_FRAME)
        stream.queue.close()


def _stream(request: Request, ctx: AppContext, req: CompletionRequest) -> Response:
    stream = ChunkStream(ctx, req.model)
    stream.chunk({"role": "assistant"})
    ctx.turns.spawn(_stream_turn(ctx, req.turn, stream))
    # Test control may cut the stream after N chunks (a fault's hook; nothing by default).
    frames = ctx.hooks.stream(request.scope, stream.queue.frames(ctx.settings.keepalive_seconds))
    return sse_response(frames, identity_headers(req.turn.session_id, req.turn.session_key))


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
                summary="OpenAI-compatible chat: one agent turn, persisted as a session",
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
