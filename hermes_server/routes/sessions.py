"""The session resource routes: list, create, get, patch, delete, messages, fork."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.domain.ids import create_id_error, fork_id_error, requested_id
from hermes_server.domain.params import ListQuery
from hermes_server.domain.projection import message_projection, session_projection
from hermes_server.domain.titles import has_lone_surrogate, sanitize_title
from hermes_server.faults import fork_step_done
from hermes_server.http.auth import check_bearer
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import (
    ApiError,
    invalid_field,
    invalid_session_id,
    session_exists,
    session_not_found,
)
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.services import Services
from hermes_server.store import lineage, listing, messages, sessions
from hermes_server.store.db import loop_read
from hermes_server.store.errors import StorageFault

PATCHABLE_FIELDS = {"title", "end_reason"}
# What a fork whose storage failed after step k left stored (its steps are separate writes).
_FORK_WRITTEN = {
    1: "the source session is closed, no fork was created",
    2: "fork {fork_id} was created without its messages and title",
    3: "fork {fork_id} was created with its messages but without its title",
}


def _session_body(row: dict[str, Any], status: int = 200) -> Response:
    return HermesJSONResponse({"object": "hermes.session", "session": session_projection(row)}, status)


def _first_query_values(request: Request) -> dict[str, str]:
    first: dict[str, str] = {}
    query = request.scope.get("query_string", b"").decode("utf-8", "replace")
    for key, value in parse_qsl(query, keep_blank_values=True):
        first.setdefault(key, value)
    return first


def storable_text(value: str, field: str) -> str:
    """D6: text SQLite cannot store (a lone surrogate) is a 400 naming the field, not a 500."""
    if has_lone_surrogate(value):
        raise invalid_field(field, f"Invalid value for '{field}': text must be valid Unicode")
    return value


async def existing_session(svc: Services, session_id: str) -> dict[str, Any]:
    """The exact row for a path id: 503 when storage is down, else 404 when absent."""
    await svc.db.ensure_open()
    row = await svc.db.read(sessions.get_session, session_id)
    if row is None:
        raise session_not_found(session_id)
    return row


async def list_sessions(request: Request, svc: Services) -> Response:
    """GET /api/sessions."""
    check_bearer(request, svc.settings.api_key)
    await svc.db.ensure_open()
    query = ListQuery.parse(_first_query_values(request))
    rows = await svc.db.read(listing.list_sessions, query)
    return HermesJSONResponse({
        "object": "list",
        "data": [session_projection(row) for row in rows],
        "limit": query.limit,
        "offset": query.offset,
        "has_more": len(rows) == query.limit,
    })


async def create_session(request: Request, svc: Services) -> Response:
    """POST /api/sessions: JSON is parsed before the 503, as upstream does."""
    check_bearer(request, svc.settings.api_key)
    body = await read_json_object(request, svc.settings.max_request_bytes)
    await svc.db.ensure_open()
    chosen = requested_id(body)
    session_id = chosen if chosen is not None else svc.new_session_id()
    problem = create_id_error(session_id)
    if problem:
        raise invalid_session_id(problem)
    model = body.get("model") or svc.settings.model_name
    system_prompt = body.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise ApiError(400, "system_prompt must be a string", "invalid_system_prompt")
    if system_prompt is not None:
        storable_text(system_prompt, "system_prompt")
    title = body.get("title")
    row = await svc.db.write(
        sessions.create_session,
        session_id,
        model=storable_text(str(model), "model"),
        system_prompt=system_prompt,
        title=None if title is None else str(title),
        now=svc.now(),
    )
    return _session_body(row, 201)


async def get_session(request: Request, svc: Services) -> Response:
    """GET /api/sessions/{id}: the exact row, no tip following, archived rows included."""
    check_bearer(request, svc.settings.api_key)
    return _session_body(await existing_session(svc, request.path_params["session_id"]))


async def patch_session(request: Request, svc: Services) -> Response:
    """PATCH /api/sessions/{id}: title first, then end_reason, each its own transaction."""
    check_bearer(request, svc.settings.api_key)
    session_id = request.path_params["session_id"]
    before = await existing_session(svc, session_id)
    body = await read_json_object(request, svc.settings.max_request_bytes)
    unknown = sorted(set(body) - PATCHABLE_FIELDS)
    if unknown:
        raise ApiError(400, f"Unsupported session fields: {', '.join(unknown)}", "unsupported_session_field")
    end_reason = body.get("end_reason")
    if end_reason:
        end_reason = storable_text(str(end_reason), "end_reason")
    if "title" in body:
        raw = body["title"]
        clean = sanitize_title("" if raw is None else str(raw))
        await svc.db.write(sessions.set_title, session_id, clean)
    if end_reason:
        await svc.db.write(sessions.end_session, session_id, end_reason, svc.now())
    after = await svc.db.read(sessions.get_session, session_id)
    return _session_body(after or before)


async def delete_session(request: Request, svc: Services) -> Response:
    """DELETE /api/sessions/{id}: delegates cascade, other children are unlinked."""
    check_bearer(request, svc.settings.api_key)
    session_id = request.path_params["session_id"]
    await existing_session(svc, session_id)
    deleted = await svc.db.write(sessions.delete_session, session_id)
    return HermesJSONResponse({"object": "hermes.session.deleted", "id": session_id, "deleted": bool(deleted)})


@loop_read
def _resolved_transcript(conn: Any, session_id: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The 404 check, the resolution and the rows in one read snapshot; None when absent."""
    if not sessions.session_exists(conn, session_id):
        return None
    target = lineage.resolve_messages_target(conn, session_id)
    return target, messages.active_messages(conn, target)


async def list_messages(request: Request, svc: Services) -> Response:
    """GET /api/sessions/{id}/messages: 404 on the exact id, then compression resolution (D2)."""
    check_bearer(request, svc.settings.api_key)
    session_id = request.path_params["session_id"]
    await svc.db.ensure_open()
    transcript = await svc.db.read(_resolved_transcript, session_id)
    if transcript is None:
        raise session_not_found(session_id)
    target, rows = transcript
    return HermesJSONResponse({
        "object": "list",
        "session_id": target,
        "data": [message_projection(row) for row in rows],
    })


async def fork_session(request: Request, svc: Services) -> Response:
    """POST /api/sessions/{id}/fork: four separate writes, title validated last (non-atomic)."""
    check_bearer(request, svc.settings.api_key)
    source_id = request.path_params["session_id"]
    source = await existing_session(svc, source_id)
    body = await read_json_object(request, svc.settings.max_request_bytes)
    chosen = requested_id(body)
    fork_id = chosen if chosen is not None else svc.new_session_id()
    problem = fork_id_error(fork_id)
    if problem:
        raise invalid_session_id(problem)
    if await svc.db.read(sessions.session_exists, fork_id):
        raise session_exists(fork_id)

    done = 0

    async def step(write: Any, *args: Any) -> None:
        """One of fork's four writes; `fork_step_done` lets an injected fault pause or stop the fork after it."""
        nonlocal done
        await svc.db.write(write, *args)
        done += 1
        await fork_step_done(svc, done)

    try:
        await step(sessions.end_session, source_id, "branched", svc.now())
        await step(sessions.create_fork_child, fork_id, source, svc.now())
        await step(messages.copy_active_messages, source_id, fork_id)
        title = body.get("title")
        if title is None:
            title = await svc.db.read(sessions.next_title, source.get("title") or "fork")
        await step(sessions.set_title, fork_id, sanitize_title(str(title)))
    except StorageFault as exc:
        if not done:
            raise
        # The storage refused a later step: the answer says what the earlier ones stored.
        raise StorageFault(exc.reason, written=_FORK_WRITTEN[done].format(fork_id=fork_id)) from None

    child = await svc.db.read(sessions.get_session, fork_id)
    return _session_body(child or {"id": fork_id, "parent_session_id": source_id}, 201)
