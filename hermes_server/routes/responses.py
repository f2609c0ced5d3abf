"""The Responses API: POST /v1/responses (plain or streamed), GET and DELETE /v1/responses/{id}.

Each request is one agent turn on a session: a new one (a uuid) unless it continues a
stored response (`previous_response_id`, or the latest response of a named
`conversation`), whose session it appends to. The model sees only the stored chain's
history (or the request's explicit `conversation_history`), never state.db's.
Answered responses are kept in `response_store.db` (`store/responses.py`) unless
`store` is false. Checks run in upstream's order: bearer key, the run cap, the
session-key header, the JSON body, then the fields.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.deviations import CrashingInput
from hermes_server.api.errors import crashing_non_object, invalid_response_json
from hermes_server.api.session_key import session_key
from hermes_server.chat.response_stream import ResponseStream, stream_response
from hermes_server.chat.slots import Admission
from hermes_server.chat.turn import ChatTurn, answer
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.errors import CompletionFailed
from hermes_server.domain.response_history import model_turn
from hermes_server.domain.response_input import fingerprint, output_items, parse_response_input, user_turn
from hermes_server.domain.titles import has_lone_surrogate
from hermes_server.families import Family
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import EventQueue, event_frame, sse_response
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.openapi.responses_schemas import COMPONENTS
from hermes_server.routes.common import idempotency, identity_headers

log = logging.getLogger("hermes_server.chat")

NO_RESPONSE = "(No response generated)"


def _not_found(response_id: str) -> ApiError:
    return ApiError(404, f"Response not found: {response_id}")


def _previous_not_found(previous: Any) -> Exception:
    """The 404 of an unknown `previous_response_id`; D6 when 0.19.0 crashes looking it up (a lone surrogate)."""
    error = ApiError(404, f"Previous response not found: {previous}")
    return CrashingInput(error) if isinstance(previous, str) and has_lone_surrogate(previous) else error


class _FrameSink:
    """A streamed response's events as `event:`/`data:` frames (ASCII-escaped JSON) on a queue."""

    def __init__(self) -> None:
        self.queue = EventQueue()

    def event(self, kind: str, payload: dict[str, Any]) -> None:
        self.queue.put(event_frame(kind, payload, ascii_only=True))

    def close(self) -> None:
        self.queue.close()


class _Saver:
    """Stores one response's envelope and history (and advances its conversation), when `store` is on."""

    def __init__(self, ctx: AppContext, response_id: str, store: bool, conversation: Any,
                 instructions: Any, session_id: str) -> None:
        self.ctx, self.response_id, self.store = ctx, response_id, store
        self.conversation, self.instructions, self.session_id = conversation, instructions, session_id

    async def __call__(self, envelope: dict[str, Any], history: list[dict[str, Any]]) -> None:
        if not self.store:
            return
        try:
            await self.ctx.response_store.put(self.response_id, {
                "response": envelope, "conversation_history": history,
                "instructions": self.instructions, "session_id": self.session_id,
            })
            if self.conversation:
                await self.ctx.response_store.set_conversation(self.conversation, self.response_id)
        except Exception as exc:  # noqa: BLE001 - the answer stands; only the chaining is lost
            log.warning("response %s could not be stored (%s)", self.response_id, type(exc).__name__)

    async def completed(self, envelope: dict[str, Any], history: list[dict[str, Any]], user_message: Any,
                        turn_messages: list[dict[str, Any]]) -> None:
        """Store a finished turn on `history` (as the request gave it, before the model's merge)."""
        await self(envelope, self.ctx.behaviour.history_after_turn(history, user_message, turn_messages))


async def create_response(request: Request, ctx: AppContext) -> Response:
    """POST /v1/responses: one turn, answered as a response object or as `response.*` events."""
    with ctx.slots.admit() as admission:  # the run cap, right after the key
        return await _respond(request, ctx, admission)


async def _respond(request: Request, ctx: AppContext, admission: Admission) -> Response:
    settings = ctx.settings
    key = session_key(request, settings.api_key)
    body = await read_json_object(request, crashing_non_object, invalid_response_json)
    parsed = parse_response_input(body, settings.model_name, lax_instructions=ctx.behaviour.lax_instructions)
    previous = parsed.previous_response_id
    if parsed.conversation:
        previous = await ctx.response_store.conversation(parsed.conversation)
    history, stored_session, instructions = parsed.history, None, parsed.instructions
    if not history and previous:
        stored = await ctx.response_store.get(previous)
        if stored is None:
            raise _previous_not_found(previous)
        history = list(stored.get("conversation_history") or [])
        stored_session = stored.get("session_id")
        if instructions is None:
            instructions = stored.get("instructions")
    history, user_message = user_turn(parsed.messages, history, parsed.truncate)
    session_id = stored_session if isinstance(stored_session, str) and stored_session else ctx.ids.uuid()
    seen, prompt = model_turn(history, user_message)
    turn = ChatTurn(session_id, user_message, instructions or None, key, history=seen, origin=request.scope,
                    prompt=prompt)
    if parsed.stream:
        response_id = f"resp_{ctx.ids.hex(28)}"
        save = _Saver(ctx, response_id, parsed.store, parsed.conversation, instructions, session_id)
        sink = _FrameSink()
        stream = ResponseStream(ctx, sink, response_id, parsed.model, int(ctx.now()),
                                upstream_events=ctx.behaviour.upstream_response_events)
        created = {**stream.envelope("in_progress"), "output": []}
        stream.write("response.created", {"response": created})
        await save(created, [*history, {"role": "user", "content": user_message}])
        admission.release()
        ctx.turns.spawn(stream_response(ctx, stream, turn, history, save))
        frames = ctx.hooks.stream(request.scope, sink.queue.frames(settings.keepalive_seconds))
        return sse_response(frames, identity_headers(session_id, key))
    replay = idempotency(request, body, fingerprint)
    admission.release()  # the turn's task is spawned next, with nothing awaited between
    outcome = await answer(ctx, turn, CompletionFailed, replay)
    final = outcome.final_text or NO_RESPONSE
    response_id = f"resp_{ctx.ids.hex(28)}"
    data = {
        "id": response_id, "object": "response", "status": "completed", "created_at": int(ctx.now()),
        "model": parsed.model, "output": output_items(outcome.messages, final), "usage": outcome.usage.public(),
    }
    save = _Saver(ctx, response_id, parsed.store, parsed.conversation, instructions, session_id)
    await save.completed(data, history, user_message, outcome.messages)
    return HermesJSONResponse(data, headers=identity_headers(session_id, key))


async def get_response(request: Request, ctx: AppContext) -> Response:
    """GET /v1/responses/{response_id}: the stored response object."""
    response_id = request.path_params["response_id"]
    stored = await ctx.response_store.get(response_id)
    if stored is None:
        raise _not_found(response_id)
    return HermesJSONResponse(stored.get("response"))


async def delete_response(request: Request, ctx: AppContext) -> Response:
    """DELETE /v1/responses/{response_id}: forget it (and the conversation names pointing at it)."""
    response_id = request.path_params["response_id"]
    if not await ctx.response_store.delete(response_id):
        raise _not_found(response_id)
    return HermesJSONResponse({"id": response_id, "object": "response", "deleted": True})


def routes() -> list[Route]:
    """The Responses API routes and what they promise."""
    return [
        Route(route_ids.RESPONSES, "/v1/responses", {
            "POST": Method(create_response, Operation(
                summary="OpenAI Responses API: one agent turn, stored for chaining unless `store` is false",
                responses={200: "ResponseObject", 400: "BadRequest", 403: "Forbidden", 404: "NotFound",
                           413: "PayloadTooLarge", 429: "TooManyRuns", 500: "ServerError", **AUTH_ERRORS},
                capability="responses", features=("responses_api", "responses_streaming"), body="ResponseRequest",
                headers=("X-Hermes-Session-Key", "Idempotency-Key"), effect=Effect.UNSAFE, streams=True)),
        }),
        Route(route_ids.RESPONSE, "/v1/responses/{response_id}", {
            "GET": Method(get_response, Operation(
                summary="A stored response", responses={200: "StoredResponse", 404: "NotFound", **AUTH_ERRORS})),
            "DELETE": Method(delete_response, Operation(
                summary="Forget a stored response",
                responses={200: "ResponseDeleted", 404: "NotFound", **AUTH_ERRORS})),
        }),
    ]


def family() -> Family:
    """The Responses API as a unit of the app, with the OpenAPI components its routes name."""
    return Family("responses", routes(), components=COMPONENTS)
