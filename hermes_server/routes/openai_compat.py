"""POST /v1/chat/completions: OpenAI-style chat over the same sessions as `/api/sessions`.

Clients such as Open WebUI, LobeChat or the `openai` package speak this route only.
Each call is one agent turn, run and persisted by the same runner as session chat
(`agents/runner.py`), so the turn shows up under `/api/sessions/{id}/messages`:

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

import asyncio
import json
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response

from hermes_server.agents.base import AgentEvent, Delta, ToolEvent, Usage
from hermes_server.agents.runner import ChatTurn, TurnOutcome, run_turn
from hermes_server.domain.openai_messages import (
    MessagesError,
    continued_session_id,
    derived_session_id,
    parse_messages,
    request_bool,
    request_fingerprint,
)
from hermes_server.domain.redact import redact
from hermes_server.http.auth import check_bearer, raw_header, session_key
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.routes.chat import EventStream, identity_headers, sse_headers
from hermes_server.services import Services

log = logging.getLogger("hermes_server.chat")

DONE_FRAME = "data: [DONE]\n\n"
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
    fingerprint: str


def _continuation(request: Request, api_key: str | None) -> str | None:
    """The `X-Hermes-Session-Id` to continue, or None; 403 without a server key, 400 when unusable."""
    raw = raw_header(request, b"x-hermes-session-id")
    value = raw.decode("utf-8", "surrogateescape") if raw is not None else ""
    if not value.strip():  # blank (Unicode whitespace included) means absent
        return None
    if not api_key:
        raise ApiError(403, _NO_KEY_CONTINUATION)
    try:
        return continued_session_id(value)
    except MessagesError as exc:
        raise ApiError(400, exc.message, shape="two_field") from None


async def _validated(request: Request, svc: Services) -> CompletionRequest:
    settings = svc.settings
    check_bearer(request, settings.api_key)
    body = await read_json_object(request, settings.max_request_bytes)
    try:
        conversation = parse_messages(body)
    except MessagesError as exc:
        if exc.bare:
            raise ApiError(400, exc.message, shape="two_field") from None
        raise ApiError(400, exc.message, exc.code, exc.param) from None
    key = session_key(request, settings.api_key)
    continued = _continuation(request, settings.api_key)
    if continued is not None:
        turn = ChatTurn(continued, conversation.user_message, conversation.instruction, key)
    else:
        turn = ChatTurn(derived_session_id(conversation), conversation.user_message, conversation.instruction,
                        key, history=conversation.history)
    return CompletionRequest(
        turn, body.get("model", settings.model_name), request_bool(body.get("stream")), request_fingerprint(body),
    )


def _usage(usage: Usage | None) -> dict[str, int]:
    counts = usage.public() if usage else {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    return {
        "prompt_tokens": counts["input_tokens"],
        "completion_tokens": counts["output_tokens"],
        "total_tokens": counts["total_tokens"],
    }


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:29]}"


# -- Idempotency-Key (non-streaming only) --------------------------------------


@dataclass
class ReplayCache:
    """Upstream's Idempotency-Key cache: a retried request gets the first answer's turn.

    Keyed by the header value; a hit needs the same fingerprint (model, messages,
    tools, tool_choice, stream), and nothing else counts, not even the session
    headers. Entries live 300 s, at most 1,000 are kept; concurrent identical
    requests share one turn. A failed turn is not remembered.
    """

    ttl: float = 300.0
    size: int = 1000
    done: OrderedDict[str, tuple[str, float, TurnOutcome]] = field(default_factory=OrderedDict)
    running: dict[tuple[str, str], asyncio.Task[TurnOutcome]] = field(default_factory=dict)

    def _purge(self) -> None:
        now = time.monotonic()
        for key in [k for k, (_, at, _) in self.done.items() if now - at > self.ttl]:
            del self.done[key]
        while len(self.done) > self.size:
            self.done.popitem(last=False)

    async def run(self, key: str, fingerprint: str, start: Any) -> TurnOutcome:
        """The remembered outcome for (key, fingerprint), else the one `start()` produces."""
        self._purge()
        hit = self.done.get(key)
        if hit is not None and hit[0] == fingerprint:
            return hit[2]
        task = self.running.get((key, fingerprint))
        if task is None:
            task = start()
            self.running[(key, fingerprint)] = task

            def remember(done: asyncio.Task[TurnOutcome]) -> None:
                if self.running.get((key, fingerprint)) is done:
                    del self.running[(key, fingerprint)]
                if not done.cancelled() and done.exception() is None:
                    self.done[key] = (fingerprint, time.monotonic(), done.result())
                    self._purge()

            task.add_done_callback(remember)
        return await asyncio.shield(task)


def replay_cache(svc: Services) -> ReplayCache:
    """This server's cache (one per Services, created on first use)."""
    if svc.completion_replays is None:
        svc.completion_replays = ReplayCache()
    return svc.completion_replays


# -- the non-streaming answer ---------------------------------------------------


async def _complete(request: Request, svc: Services, req: CompletionRequest) -> Response:
    def start() -> asyncio.Task[TurnOutcome]:
        return svc.spawn(run_turn(svc, req.turn))

    idempotency_key = request.headers.get("idempotency-key")
    try:
        if idempotency_key:
            outcome = await replay_cache(svc).run(idempotency_key, req.fingerprint, start)
        else:
            outcome = await asyncio.shield(start())
    except Exception as exc:  # noqa: BLE001 - upstream's answer to an agent that raised
        log.warning("session %r: the agent failed (%s)", req.turn.session_id, type(exc).__name__)
        raise ApiError(500, f"Internal server error: {exc}", type_="server_error") from None
    return HermesJSONResponse(
        {
            "id": _completion_id(),
            "object": "chat.completion",
            "created": int(svc.now()),
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


class ChunkStream(EventStream):
    """The frames of one streamed completion: OpenAI chunks, tool progress, `[DONE]`.

    Reuses session chat's queue, idle keepalive and disconnect handling; only the
    framing differs (`data:` lines, ASCII-escaped JSON as upstream writes them).
    """

    def __init__(self, svc: Services, session_id: str, model: Any) -> None:
        super().__init__(svc, session_id)
        self.completion_id = _completion_id()
        self.created = int(svc.now())
        self.model = model
        self.open_tools: dict[str, str] = {}

    def put(self, frame: str) -> None:
        if self.listening:
            self.queue.put_nowait(frame.encode("ascii"))

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> None:
        payload = {
            "id": self.completion_id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            **extra,
        }
        self.put(f"data: {json.dumps(payload)}\n\n")

    def tool_progress(self, payload: dict[str, Any]) -> None:
        self.put(f"event: hermes.tool.progress\ndata: {json.dumps(payload)}\n\n")

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


async def _stream_turn(svc: Services, turn: ChatTurn, stream: ChunkStream) -> None:
    """Run the turn, then the finish chunk (`stop`, or `error` with upstream's failure fields) and `[DONE]`."""
    try:
        outcome = await run_turn(svc, turn, stream.agent_event)
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
        stream.put(DONE_FRAME)
        stream.close()


def _stream(svc: Services, req: CompletionRequest) -> Response:
    stream = ChunkStream(svc, req.turn.session_id, req.model)
    stream.chunk({"role": "assistant"})
    svc.spawn(_stream_turn(svc, req.turn, stream))
    response = EventSourceResponse(stream.frames(svc.settings.keepalive_seconds), ping=0)
    response.raw_headers = sse_headers(identity_headers(req.turn.session_id, req.turn.session_key))
    return response


async def chat_completions(request: Request, svc: Services) -> Response:
    """POST /v1/chat/completions: one agent turn, as a chat.completion or as streamed chunks."""
    req = await _validated(request, svc)
    if req.stream:
        return _stream(svc, req)
    return await _complete(request, svc, req)
