"""The session resource routes: list, create, get, patch, delete, messages, fork.

Where releases differ (the flags of 0.20.4, message paging, what a create stores) the handlers
follow the strategies of `ctx.behaviour`, set by the served release's units."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.deviations import CrashingInput, LongCreateTitle
from hermes_server.api.errors import (
    invalid_field,
    invalid_pagination,
    invalid_session_id,
    session_exists,
    session_not_found,
)
from hermes_server.chat.hooks import Point
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.errors import SessionGone, StorageFault
from hermes_server.domain.ids import fork_id_error, requested_id
from hermes_server.domain.paging import BadPagination
from hermes_server.domain.params import ListQuery
from hermes_server.domain.projection import message_projection
from hermes_server.domain.session_flags import NotABoolean
from hermes_server.domain.titles import TitleTooLong, has_lone_surrogate, sanitize_title
from hermes_server.families import Family
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.pipeline import note_session
from hermes_server.http.responses import HermesJSONResponse, dumps
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.openapi import sessions_schemas as schemas
from hermes_server.openapi.common import BODY_ERRORS, SESSION_ERRORS, STORE_ERRORS
from hermes_server.routes.common import existing_session, first_query_values
from hermes_server.store import listing, messages, sessions

# What a fork whose storage failed after step k left stored (its steps are separate writes).
_FORK_WRITTEN = {
    1: "the source session is closed, no fork was created",
    2: "fork {fork_id} was created without its messages and title",
    3: "fork {fork_id} was created with its messages but without its title",
}


def _session_document(ctx: AppContext, row: dict[str, Any]) -> bytes:
    return dumps({"object": "hermes.session", "session": ctx.behaviour.sessions.project(row)})


def _session_body(ctx: AppContext, row: dict[str, Any], status: int = 200) -> Response:
    return HermesJSONResponse.encoded(_session_document(ctx, row), status)


def refuse_id(session_id: str, problem: str) -> Exception:
    """The 400 for an id create or fork refuses; D6 when 0.19.0 would crash on it (a lone surrogate)."""
    error = invalid_session_id(problem)
    return CrashingInput(error) if has_lone_surrogate(session_id) else error


def storable_text(value: str, field: str) -> str:
    """D6: text SQLite cannot store (a lone surrogate) is a 400 naming the field, not a 500."""
    if has_lone_surrogate(value):
        raise invalid_field(field, f"Invalid value for '{field}': text must be valid Unicode")
    return value


async def list_sessions(request: Request, ctx: AppContext) -> Response:
    """GET /api/sessions (remembered until state.db changes: store/read_cache.py)."""
    await ctx.db.ensure_open()
    query = ListQuery.parse(first_query_values(request))
    behaviour = ctx.behaviour
    shape = behaviour.sessions

    async def build() -> bytes:
        rows = await ctx.db.read(listing.list_sessions, query, behaviour.reading)
        return dumps({
            "object": "list",
            "data": [shape.project(row) for row in rows],
            "limit": query.limit,
            "offset": query.offset,
            "has_more": shape.has_more(rows, query.limit),
        })

    return HermesJSONResponse.encoded(await ctx.reads.get(("list", query), build))


async def create_session(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions: JSON is parsed before the 503, as upstream does."""
    body = await read_json_object(request)
    await ctx.db.ensure_open()
    chosen = requested_id(body)
    session_id = chosen if chosen is not None else ctx.ids.session_id(ctx.now())
    problem = ctx.behaviour.create_id_problem(session_id)
    if problem:
        raise refuse_id(session_id, problem)
    note_session(request, session_id)
    model, source = ctx.behaviour.new_session(body, ctx.settings.model_name)
    system_prompt = body.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise ApiError(400, "system_prompt must be a string", "invalid_system_prompt")
    if system_prompt is not None:
        storable_text(system_prompt, "system_prompt")
    title = body.get("title")
    try:
        row = await ctx.db.write(
            sessions.create_session,
            session_id,
            model=None if model is None else storable_text(str(model), "model"),
            system_prompt=system_prompt,
            title=None if title is None else str(title),
            now=ctx.now(),
            source=source,
        )
    except TitleTooLong as exc:  # D1: 0.19.0 crashes here (PATCH and fork refuse it as we do)
        raise LongCreateTitle(exc) from None
    return _session_body(ctx, row, 201)


async def get_session(request: Request, ctx: AppContext) -> Response:
    """GET /api/sessions/{id}: the exact row, no tip following, archived rows included (remembered
    until state.db changes)."""
    session_id = request.path_params["session_id"]
    await ctx.db.ensure_open()

    async def build() -> bytes:
        return _session_document(ctx, await existing_session(ctx, session_id))

    return HermesJSONResponse.encoded(await ctx.reads.get(("session", session_id), build))


async def patch_session(request: Request, ctx: AppContext) -> Response:
    """PATCH /api/sessions/{id}: title first, then the flags (0.20.4), then end_reason, each its
    own transaction; every flag is checked before anything is written."""
    session_id = request.path_params["session_id"]
    before = await existing_session(ctx, session_id)
    body = await read_json_object(request)
    shape = ctx.behaviour.sessions
    unknown = sorted(set(body) - shape.patchable)
    if unknown:
        raise ApiError(400, f"Unsupported session fields: {', '.join(unknown)}", "unsupported_session_field")
    try:
        changes = shape.changes(body)
    except NotABoolean as refused:
        raise ApiError(400, str(refused), "invalid_session_field") from None
    end_reason = body.get("end_reason")
    if end_reason:
        end_reason = storable_text(str(end_reason), "end_reason")
    if "title" in body:
        raw = body["title"]
        clean = sanitize_title("" if raw is None else str(raw))
        await ctx.db.write(sessions.set_title, session_id, clean)
    if changes:
        await ctx.db.write(sessions.set_flags, session_id, changes, ctx.now())
    if end_reason:
        await ctx.db.write(sessions.end_session, session_id, end_reason, ctx.now())
    after = await ctx.db.read(sessions.get_session, session_id, ctx.behaviour.reading)
    return _session_body(ctx, after or before)


async def delete_session(request: Request, ctx: AppContext) -> Response:
    """DELETE /api/sessions/{id}: delegates cascade, other children are unlinked."""
    session_id = request.path_params["session_id"]
    await existing_session(ctx, session_id)
    deleted = await ctx.db.write(sessions.delete_session, session_id)
    return HermesJSONResponse({"object": "hermes.session.deleted", "id": session_id, "deleted": bool(deleted)})


async def list_messages(request: Request, ctx: AppContext) -> Response:
    """GET /api/sessions/{id}/messages: 404 on the exact id, then compression resolution (D2);
    remembered until state.db changes."""
    session_id = request.path_params["session_id"]
    await ctx.db.ensure_open()
    # The page asked for (a refused parameter is answered after the 404 check, as upstream orders them).
    page = ctx.behaviour.message_pages(first_query_values(request))

    async def build() -> bytes:
        takes_over = ctx.behaviour.fork_takes_over_messages
        transcript = await ctx.db.read(messages.resolved_transcript, session_id, takes_over)
        if transcript is None:
            raise session_not_found(session_id)
        target, rows = transcript
        if isinstance(page, BadPagination):
            raise invalid_pagination(str(page))
        selected = rows if page is None else page.select(rows)
        document: dict[str, Any] = {
            "object": "list",
            "session_id": target,
            "data": [message_projection(row) for row in selected],
        }
        if page is not None:
            document["pagination"] = page.block(len(selected))
        return dumps(document)

    return HermesJSONResponse.encoded(await ctx.reads.get(("messages", session_id, page), build))


async def fork_session(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/fork: four separate writes, title validated last (non-atomic)."""
    source_id = request.path_params["session_id"]
    source = await existing_session(ctx, source_id)
    body = await read_json_object(request)
    chosen = requested_id(body)
    fork_id = chosen if chosen is not None else ctx.ids.session_id(ctx.now())
    problem = fork_id_error(fork_id)
    if problem:
        raise refuse_id(fork_id, problem)
    if await ctx.db.read(sessions.session_exists, fork_id):
        raise session_exists(fork_id)

    done = 0

    async def step(write: Any, *args: Any) -> None:
        """One of fork's four writes; test control may pause or stop the fork after it
        (a fault's hook; nothing by default)."""
        nonlocal done
        await ctx.db.write(write, *args)
        done += 1
        await ctx.hooks.at(Point.FORK_STEP, step=done).happen()

    try:
        await step(sessions.end_session, source_id, "branched", ctx.now())
        try:
            await step(sessions.create_fork_child, fork_id, source, ctx.now())
        except SessionGone as exc:  # the source was deleted meanwhile: 0.19.0 crashes on the foreign key (D6)
            raise CrashingInput(exc) from None
        await step(messages.copy_active_messages, source_id, fork_id)
        title = body.get("title")
        if title is None:
            title = await ctx.db.read(sessions.next_title, source.get("title") or "fork")
        await step(sessions.set_title, fork_id, sanitize_title(str(title)))
    except StorageFault as exc:
        if not done:
            raise
        # The storage refused a later step: the answer says what the earlier ones stored.
        raise StorageFault(exc.reason, written=_FORK_WRITTEN[done].format(fork_id=fork_id)) from None

    child = await ctx.db.read(sessions.get_session, fork_id)
    return _session_body(ctx, child or {"id": fork_id, "parent_session_id": source_id}, 201)


def routes() -> list[Route]:
    """The session resource routes and what each method promises."""
    return [
        Route(route_ids.SESSIONS, "/api/sessions", {
            "GET": Method(list_sessions, Operation(
                summary="List sessions", description=schemas.LIST_SESSIONS,
                responses={200: "SessionList", **STORE_ERRORS},
                capability="sessions", features=("session_resources",),
                query=("limit", "offset", "source", "include_children"),
                effect=Effect.READ | Effect.LIST, documented="sessions_list")),
            "POST": Method(create_session, Operation(
                summary="Create a session", description=schemas.CREATE_SESSION,
                responses={201: "Session", 409: "Conflict", **BODY_ERRORS, 400: "CreateSessionBadRequest",
                           **STORE_ERRORS},
                capability="session_create", features=("session_resources",), body="CreateSession",
                effect=Effect.UNSAFE, documented="session_create")),
        }),
        Route(route_ids.SESSION, "/api/sessions/{session_id}", {
            "GET": Method(get_session, Operation(
                summary="Get a session", description=schemas.GET_SESSION, responses={200: "Session", **SESSION_ERRORS},
                capability="session", features=("session_resources",), effect=Effect.READ,
                documented="session_get")),
            "PATCH": Method(patch_session, Operation(
                summary="Update a session", description=schemas.PATCH_SESSION,
                responses={200: "Session", **BODY_ERRORS, 400: "PatchSessionBadRequest", **SESSION_ERRORS},
                capability="session_update", features=("session_resources",), body="PatchSession",
                effect=Effect.UNSAFE | Effect.WRITE, documented="session_patch")),
            "DELETE": Method(delete_session, Operation(
                summary="Delete a session", description=schemas.DELETE_SESSION,
                responses={200: "SessionDeleted", **SESSION_ERRORS},
                capability="session_delete", features=("session_resources",), effect=Effect.UNSAFE,
                documented="session_delete")),
        }),
        Route(route_ids.SESSION_MESSAGES, "/api/sessions/{session_id}/messages", {
            "GET": Method(list_messages, Operation(
                summary="List a session's messages", description=schemas.SESSION_MESSAGES,
                responses={200: "MessageList", **SESSION_ERRORS},
                capability="session_messages", features=("session_resources",), effect=Effect.READ,
                documented="session_messages")),
        }),
        Route(route_ids.SESSION_FORK, "/api/sessions/{session_id}/fork", {
            "POST": Method(fork_session, Operation(
                summary="Fork a session", description=schemas.FORK_SESSION,
                responses={201: "Session", 409: "Conflict", **BODY_ERRORS, 400: "ForkSessionBadRequest",
                           **SESSION_ERRORS},
                capability="session_fork", features=("session_fork",), body="ForkSession",
                effect=Effect.UNSAFE | Effect.WRITE | Effect.FORK, documented="session_fork")),
        }),
    ]


def family() -> Family:
    """The session resource routes as a unit of the app, with the OpenAPI components they name."""
    return Family("sessions", routes(), components=schemas.COMPONENTS)
