"""The Responses API: POST /v1/responses (plain or streamed), GET and DELETE /v1/responses/{id}.

The handlers parse and keep upstream's order of checks: bearer key, the run cap, the
session-key header, the JSON body, then the fields, then the response continued (an
unknown one is a 404). What a request continues from, its session, its turn and the
response kept for the next one are the use case's (chat/responses.py).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import (
    crashing_non_object,
    invalid_response_json,
    previous_response_not_found,
    response_not_found,
)
from hermes_server.api.session_key import session_key
from hermes_server.chat import responses
from hermes_server.chat.slots import Admission
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.response_input import fingerprint, parse_response_input
from hermes_server.families import Family
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import EventQueue
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.openapi.responses_schemas import COMPONENTS, CREATE_RESPONSE
from hermes_server.routes.common import idempotency, identity_headers, stream_answer


async def create_response(request: Request, ctx: AppContext) -> Response:
    """POST /v1/responses: one turn, answered as a response object or as `response.*` events."""
    with ctx.slots.admit() as admission:  # the run cap, right after the key
        return await _respond(request, ctx, admission)


async def _respond(request: Request, ctx: AppContext, admission: Admission) -> Response:
    key = session_key(request, ctx.settings.api_key)
    body = await read_json_object(request, crashing_non_object, invalid_response_json)
    parsed = parse_response_input(body, ctx.settings.model_name, lax_instructions=ctx.behaviour.lax_instructions)
    prepared = await responses.prepare(ctx, parsed, key, previous_response_not_found)
    headers = identity_headers(prepared.turn.session_id, key)
    if parsed.stream:
        events = EventQueue(ascii_only=True)
        await responses.start_stream(ctx, prepared, events, admission)
        return stream_answer(ctx, events, headers)
    replay = idempotency(request, body, fingerprint)
    admission.release()  # the turn's task is spawned next, with nothing awaited between
    return HermesJSONResponse(await responses.respond(ctx, prepared, replay), headers=headers)


async def get_response(request: Request, ctx: AppContext) -> Response:
    """GET /v1/responses/{response_id}: the stored response object."""
    response_id = request.path_params["response_id"]
    stored = await ctx.response_store.get(response_id)
    if stored is None:
        raise response_not_found(response_id)
    return HermesJSONResponse(stored.get("response"))


async def delete_response(request: Request, ctx: AppContext) -> Response:
    """DELETE /v1/responses/{response_id}: forget it (and the conversation names pointing at it)."""
    response_id = request.path_params["response_id"]
    if not await ctx.response_store.delete(response_id):
        raise response_not_found(response_id)
    return HermesJSONResponse({"id": response_id, "object": "response", "deleted": True})


def routes() -> list[Route]:
    """The Responses API routes and what they promise."""
    return [
        Route(route_ids.RESPONSES, "/v1/responses", {
            "POST": Method(create_response, Operation(
                summary="Create a response", description=CREATE_RESPONSE,
                responses={200: "ResponseObject", 400: "BadRequest", 403: "Forbidden", 404: "NotFound",
                           413: "PayloadTooLarge", 429: "TooManyRuns", 500: "ServerError", **AUTH_ERRORS},
                capability="responses", features=("responses_api", "responses_streaming"), body="ResponseRequest",
                headers=("X-Hermes-Session-Key", "Idempotency-Key"), effect=Effect.UNSAFE, streams=True)),
        }),
        Route(route_ids.RESPONSE, "/v1/responses/{response_id}", {
            "GET": Method(get_response, Operation(
                summary="Get a response", description="The response as it was answered, while it is stored.",
                responses={200: "StoredResponse", 404: "NotFound", **AUTH_ERRORS})),
            "DELETE": Method(delete_response, Operation(
                summary="Delete a response",
                description="Forgets the response (and any conversation name pointing at it); chains through it can "
                            "no longer continue.",
                responses={200: "ResponseDeleted", 404: "NotFound", **AUTH_ERRORS})),
        }),
    ]


def family() -> Family:
    """The Responses API as a unit of the app, with the OpenAPI components its routes name."""
    return Family("responses", routes(), components=COMPONENTS)
