"""The herm.run routes: thin handlers that parse, call the store, and project.

`build_routes(store)` gives the route table rows to add to the server's router when
the dialect is on. Each endpoint is `endpoint(request, ctx)`, where `ctx` has the
`settings` and a clock `now()`, like every other hermes-server handler. Every
operation names the dialect's security scheme, whose check (`security_checks`: the
`x-api-key` header) the pipeline runs before the handler, so a missing or wrong key is
refused before the body is read; the routes carry the dialect's error map
(envelope.HERM_RUN_ERRORS), so every refusal, storage being unavailable included, is
answered in herm.run's own envelope: never a 500.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.config import Settings
from hermes_server.hermrun import ALLOWANCE, KEY, WINDOW_SECONDS, projection
from hermes_server.hermrun.envelope import HERM_RUN_ERRORS, HermRunJSON
from hermes_server.hermrun.errors import Unauthorized
from hermes_server.hermrun.openapi import SECURITY
from hermes_server.hermrun.requests import decode_body, parse_create, parse_list, parse_update, parse_warm
from hermes_server.hermrun.rules import Allowance
from hermes_server.hermrun.store import HermRunStore
from hermes_server.http.auth import raw_header
from hermes_server.http.body import read_body
from hermes_server.http.routing import Method, Operation, Route

# Route names, as logs, the request journal and faults know them.
SESSIONS = "herm_run_sessions"
SESSION = "herm_run_session"
ARCHIVE = "herm_run_session_archive"
WARM = "herm_run_sandbox_warm"


class Context(Protocol):
    """What a handler reads besides the request (hermes-server's shared context has both)."""

    settings: Settings

    def now(self) -> float: ...


def herm_run_key(settings: Settings) -> str | None:
    """The key `x-api-key` must carry: its own when set, else the server's (None: open)."""
    return settings.extra(KEY) or settings.api_key


def security_checks(settings: Settings) -> dict[str, Callable[[Request], None]]:
    """The pipeline's check of the dialect's scheme: 401 unless the `x-api-key` header equals
    the key (constant-time; no key: open)."""
    key = herm_run_key(settings)

    def check(request: Request) -> None:
        if not key:
            return
        sent = raw_header(request, b"x-api-key")
        if sent is None or not hmac.compare_digest(sent, key.encode("utf-8")):
            raise Unauthorized("missing or invalid x-api-key header")

    return {SECURITY: check}


async def _body(request: Request) -> dict[str, Any]:
    """The JSON object body (over the size limit: the 413, which the error map words)."""
    return decode_body(await read_body(request))


def _query(request: Request) -> dict[str, str]:
    raw = request.scope.get("query_string", b"").decode("utf-8", "replace")
    return dict(parse_qsl(raw, keep_blank_values=True))


def _session_id(request: Request) -> str:
    return request.scope["path_params"]["session_id"]


# Query parameters of the list (PARAMETERS keys in hermrun/openapi.py).
LIST_QUERY = tuple(f"herm_run_{name}" for name in ("agentId", "agent", "subjectId", "subject", "status", "limit",
                                                    "offset"))


def _op(handler: Callable[..., Any], summary: str, capability: str, responses: dict[int, str], *,
        body: str | None = None, query: tuple[str, ...] = ()) -> Method:
    """An operation of the dialect: every one needs its key, and can also answer 401 and 503."""
    return Method(handler, Operation(
        summary=summary, responses={**responses, 401: "HermRunUnauthorized", 503: "HermRunUnavailable"},
        capability=capability, body=body, query=query, security=SECURITY))


def build_routes(store: HermRunStore) -> list[Route]:
    """The herm.run route table rows, bound to `store`."""

    async def create_session(request: Request, ctx: Context) -> Response:
        """POST /v1/sessions: 201 and the new idle session."""
        settings = ctx.settings
        create = parse_create(await _body(request))
        default = Allowance(settings.extra(ALLOWANCE), settings.extra(WINDOW_SECONDS))
        row = await store.create(create, ctx.now(), default, settings.deterministic)
        return HermRunJSON(projection.session_object(row), 201)

    async def list_sessions(request: Request, ctx: Context) -> Response:
        """GET /v1/sessions: one page, newest first."""
        query = parse_list(_query(request))
        rows, more = await store.list(query)
        return HermRunJSON(projection.list_object(rows, query.limit, query.offset, more))

    async def get_session(request: Request, ctx: Context) -> Response:
        return HermRunJSON(projection.session_object(await store.get(_session_id(request))))

    async def update_session(request: Request, ctx: Context) -> Response:
        sid = _session_id(request)
        update = parse_update(await _body(request))
        return HermRunJSON(projection.session_object(await store.update(sid, update, ctx.now())))

    async def delete_session(request: Request, ctx: Context) -> Response:
        sid = _session_id(request)
        await store.delete(sid)
        return HermRunJSON(projection.deleted_object(sid))

    async def archive_session(request: Request, ctx: Context) -> Response:
        """POST /v1/sessions/{id}/archive: takes no body (one sent is not read)."""
        return HermRunJSON(projection.session_object(await store.archive(_session_id(request), ctx.now())))

    async def warm(request: Request, ctx: Context) -> Response:
        """POST /v1/sandboxes/warm: a hint; creates nothing and uses no allowance."""
        hint = parse_warm(await _body(request))
        await store.check_agent(hint.agent_id)
        return HermRunJSON(projection.warm_object(hint.agent_id, hint.subject_id), 202)

    return [
        Route(SESSIONS, "/v1/sessions", {
            "GET": _op(list_sessions, "List sessions, newest first (archived ones only with status=archived)",
                       "herm_run_sessions", {200: "HermRunSessionList", 400: "HermRunValidation"}, query=LIST_QUERY),
            "POST": _op(create_session,
                        "Create a session from an agent for a subject (uses one conversation of the allowance)",
                        "herm_run_session_create",
                        {201: "HermRunSession", 400: "HermRunValidation", 404: "HermRunNotFound",
                         413: "HermRunTooLarge", 429: "HermRunRateLimited"}, body="HermRunCreateSession"),
        }, HERM_RUN_ERRORS),
        Route(SESSION, "/v1/sessions/{session_id}", {
            "GET": _op(get_session, "Retrieve a session", "herm_run_session",
                       {200: "HermRunSession", 404: "HermRunNotFound"}),
            "POST": _op(update_session, "Update the title, YOLO mode and/or metadata", "herm_run_session_update",
                        {200: "HermRunSession", 400: "HermRunValidation", 404: "HermRunNotFound",
                         413: "HermRunTooLarge"}, body="HermRunUpdateSession"),
            "DELETE": _op(delete_session, "Delete a session that has no running or waiting turn",
                          "herm_run_session_delete",
                          {200: "HermRunSessionDeleted", 404: "HermRunNotFound", 409: "HermRunInvalidState"}),
        }, HERM_RUN_ERRORS),
        Route(ARCHIVE, "/v1/sessions/{session_id}/archive", {
            "POST": _op(archive_session, "Archive a session that has no running or waiting turn",
                        "herm_run_session_archive",
                        {200: "HermRunSession", 404: "HermRunNotFound", 409: "HermRunInvalidState"}),
        }, HERM_RUN_ERRORS),
        Route(WARM, "/v1/sandboxes/warm", {
            "POST": _op(warm, "Prepare an agent for a subject ahead of session creation", "herm_run_sandbox_warm",
                        {202: "HermRunWarm", 400: "HermRunValidation", 404: "HermRunNotFound",
                         413: "HermRunTooLarge"}, body="HermRunWarmRequest"),
        }, HERM_RUN_ERRORS),
    ]
