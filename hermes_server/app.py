"""create_app(settings): the ASGI application, its route table and the request pipeline.

The pipeline mirrors upstream's middleware order, outermost first:
CORS → body-size limit → routing (framework 404/405) → handler → error mapping.
It is one small function rather than a middleware stack because every request
pays for each layer, and the order is easier to read in one place.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from hermes_server.config import Settings
from hermes_server.faults import RAW_SEND, call_with_faults
from hermes_server.fixtures import control as fixture_control
from hermes_server.http.body import ClientLeft
from hermes_server.http.errors import ApiError, body_too_large, error_response
from hermes_server.http.responses import (
    METHOD_NOT_ALLOWED_TEXT,
    NOT_FOUND_TEXT,
    SERVER_ERROR_TEXT,
    EmptyResponse,
    PlainTextResponse,
)
from hermes_server.http.routing import Route, Router
from hermes_server.logs import CLIENT_LEFT, log_access, log_failure, new_request_id
from hermes_server.openapi import AUTH_ERRORS, BODY_ERRORS, SESSION_ERRORS, STORE_ERRORS, Operation
from hermes_server.routes import chat, discovery, openai_compat, sessions
from hermes_server.routes.fixture import build_fixture_routes
from hermes_server.services import Services
from hermes_server.store.db import Database

log = logging.getLogger("hermes_server")

_BODY_METHODS = {"POST", "PUT", "PATCH"}
_CORS_BASE = {
    "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key",
}


# Chat reads X-Hermes-Session-Key and answers with X-Hermes-Session-Id, so serving it
# makes both header features true in /v1/capabilities.
_CHAT_HEADERS = ("session_key_header", "session_continuity_header")


def build_routes() -> list[Route]:
    """Every served path: its name (used in logs), methods, and what each method promises.

    The `Operation` of each method is the only description of the API: /openapi.json and
    /v1/capabilities are generated from this table.
    """
    return [
        Route("health", "/health", {"GET": discovery.health}, {
            "GET": Operation("Liveness", {200: "Health"}, "health", auth=False)}),
        Route("v1_health", "/v1/health", {"GET": discovery.health}, {
            "GET": Operation("Liveness (alias of /health)", {200: "Health"}, auth=False)}),
        Route("health_detailed", "/health/detailed", {"GET": discovery.health_detailed}, {
            "GET": Operation("Readiness checks and runtime counters",
                             {200: "HealthDetailed", **AUTH_ERRORS}, "health_detailed")}),
        Route("models", "/v1/models", {"GET": discovery.models}, {
            "GET": Operation("The advertised model", {200: "ModelList", **AUTH_ERRORS}, "models")}),
        Route("capabilities", "/v1/capabilities", {"GET": discovery.capabilities}, {
            "GET": Operation("What this server serves", {200: "Capabilities", **AUTH_ERRORS})}),
        Route("openapi", "/openapi.json", {"GET": discovery.openapi}, {
            "GET": Operation("This OpenAPI document", {200: "OpenAPIDocument"}, auth=False)}),
        Route("sessions", "/api/sessions", {"GET": sessions.list_sessions, "POST": sessions.create_session}, {
            "GET": Operation("List sessions, newest activity first", {200: "SessionList", **STORE_ERRORS},
                             "sessions", ("session_resources",),
                             query=("limit", "offset", "source", "include_children")),
            "POST": Operation("Create a session", {201: "Session", 409: "Conflict", **BODY_ERRORS, **STORE_ERRORS},
                              "session_create", ("session_resources",), body="CreateSession"),
        }),
        Route("session", "/api/sessions/{session_id}", {
            "GET": sessions.get_session,
            "PATCH": sessions.patch_session,
            "DELETE": sessions.delete_session,
        }, {
            "GET": Operation("Get one session by its exact id", {200: "Session", **SESSION_ERRORS},
                             "session", ("session_resources",)),
            "PATCH": Operation("Change the title or close the session", {200: "Session", **BODY_ERRORS, **SESSION_ERRORS},
                               "session_update", ("session_resources",), body="PatchSession"),
            "DELETE": Operation("Delete a session and its messages", {200: "SessionDeleted", **SESSION_ERRORS},
                                "session_delete", ("session_resources",)),
        }),
        Route("session_messages", "/api/sessions/{session_id}/messages", {"GET": sessions.list_messages}, {
            "GET": Operation("The active messages of the session's transcript", {200: "MessageList", **SESSION_ERRORS},
                             "session_messages", ("session_resources",)),
        }),
        Route("session_fork", "/api/sessions/{session_id}/fork", {"POST": sessions.fork_session}, {
            "POST": Operation("Fork a session into a new one with a copy of its messages",
                              {201: "Session", 409: "Conflict", **BODY_ERRORS, **SESSION_ERRORS},
                              "session_fork", ("session_fork",), body="ForkSession"),
        }),
        Route("session_chat", "/api/sessions/{session_id}/chat", {"POST": chat.session_chat}, {
            "POST": Operation("Run one agent turn on the session",
                              {200: "ChatCompletion", 403: "Forbidden", 500: "ServerError",
                               **BODY_ERRORS, **SESSION_ERRORS},
                              "session_chat", ("session_chat", *_CHAT_HEADERS), body="ChatRequest",
                              headers=("X-Hermes-Session-Key",)),
        }),
        Route("session_chat_stream", "/api/sessions/{session_id}/chat/stream", {"POST": chat.session_chat_stream}, {
            "POST": Operation("Run one agent turn on the session, streamed as server-sent events",
                              {200: "ChatStream", 403: "Forbidden", **BODY_ERRORS, **SESSION_ERRORS},
                              "session_chat_stream", ("session_chat_streaming", *_CHAT_HEADERS), body="ChatRequest",
                              headers=("X-Hermes-Session-Key",)),
        }),
        Route("chat_completions", "/v1/chat/completions", {"POST": openai_compat.chat_completions}, {
            "POST": Operation("OpenAI-compatible chat: one agent turn, persisted as a session",
                              {200: "OpenAIChatCompletion", 403: "Forbidden", 500: "ServerError",
                               **BODY_ERRORS, **AUTH_ERRORS},
                              "chat_completions", ("chat_completions", "chat_completions_streaming", *_CHAT_HEADERS),
                              body="OpenAIChatRequest",
                              headers=("X-Hermes-Session-Id", "X-Hermes-Session-Key", "Idempotency-Key")),
        }),
    ]


def cors_headers(settings: Settings, origin: str) -> dict[str, str] | None:
    """Headers for an allowed browser origin, or None."""
    if not origin or not settings.cors_origins:
        return None
    if "*" in settings.cors_origins:
        return {**_CORS_BASE, "Access-Control-Allow-Origin": "*", "Access-Control-Max-Age": "600"}
    if origin not in settings.cors_origins:
        return None
    return {**_CORS_BASE, "Access-Control-Allow-Origin": origin, "Vary": "Origin", "Access-Control-Max-Age": "600"}


def _origin_allowed(settings: Settings, origin: str) -> bool:
    if not origin:
        return True
    return bool(settings.cors_origins) and ("*" in settings.cors_origins or origin in settings.cors_origins)


def _content_length_error(request: Request, limit: int) -> Response | None:
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    try:
        length = int(raw)
    except ValueError:
        return ApiError(400, "Invalid Content-Length header.", "invalid_content_length", secure=False).response()
    if length > limit:
        return body_too_large().response()
    return None


class HermesApp:
    """The ASGI callable."""

    def __init__(self, settings: Settings, services: Services | None = None) -> None:
        self.settings = settings
        self.services = services or Services(
            settings,
            Database(
                settings.db_path,
                reader_threads=settings.reader_threads,
                write_retry_seconds=settings.write_retry_seconds,
            ),
        )
        routes = build_routes()
        # Test-control extensions (off by default): /_fixture/* routes, faults, journal, determinism.
        self.router = Router(routes + (build_fixture_routes() if settings.fixture_api else []))
        fixture_control.configure(self.services, [route.name for route in routes])
        # When this app began serving, as /health/detailed reports it.
        self.started_at = datetime.now(timezone.utc).isoformat()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                failure = await fixture_control.startup(self.services)
                if failure is not None:
                    await send({"type": "lifespan.startup.failed", "message": failure})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # Chat turns still running finish (and write) before the database closes.
                await self.services.drain_turns()
                await self.services.agent.aclose()
                await self.services.db.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request_id = new_request_id()
        # Starlette's `request.app` reads this: discovery handlers describe this app's routes.
        scope["app"] = self
        scope["hermes.request_id"] = request_id
        status = 0
        recording = None
        if self.services.journal is not None:  # --fixture-api: journal the request, allow resets
            scope[RAW_SEND] = send
            recording = self.services.journal.start(scope, receive, send)
            receive, send = recording.receive, recording.send

        completed = False

        async def send_and_note(message: Message) -> None:
            nonlocal status, completed
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                completed = True
            await send(message)

        route: Route | None = None
        try:
            response, route = await self.dispatch(Request(scope, receive))
            await response(scope, receive, send_and_note)
        except ClientLeft:  # gone mid-body: nothing to answer, nothing went wrong here
            route = scope.get("hermes.route")
            status = CLIENT_LEFT
            log.debug("%s %s: the client left before its request body was read (request %s)",
                      scope["method"], route.template if route else "-", request_id)
        except Exception as exc:  # noqa: BLE001 - a bug while sending a response: report once, end cleanly
            log_failure(exc, scope["method"], route.template if route else None, request_id)
            if not completed:
                await self._finish(send_and_note, started=status != 0)
        except asyncio.CancelledError:
            if not status:
                raise
            # Shutdown's grace period ran out: uvicorn cancels what is still running only
            # to end it. End the stream with its last chunk (the client sees a closed
            # stream, not a reset) and return normally: the request is over, not failed.
            if not completed:
                await self._finish(send_and_note, started=True)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        else:
            if not completed:  # a stream that stopped early (its client left, or shutdown)
                await self._finish(send_and_note, started=status != 0)
        finally:
            session_id = scope.get("path_params", {}).get("session_id") if route else None
            log_access(scope["method"], route.template if route else None, status,
                       time.perf_counter() - started, session_id, request_id)
            if recording is not None:
                recording.finish()

    @staticmethod
    async def _finish(send: Send, *, started: bool) -> None:
        """Complete a response the app left open: upstream's bare 500 before any byte, else the last chunk."""
        try:
            if started:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await PlainTextResponse(SERVER_ERROR_TEXT, 500)({"type": "http"}, _no_receive, send)
        except Exception:  # noqa: BLE001 - the client is gone; nothing more to tell it
            log.debug("could not finish a response", exc_info=True)

    async def dispatch(self, request: Request) -> tuple[Response, Route | None]:
        """Run the pipeline for one request; returns the response and the matched route."""
        settings = self.settings
        origin = request.headers.get("origin", "")
        if not _origin_allowed(settings, origin):
            return EmptyResponse(403), None
        cors = cors_headers(settings, origin)
        method = request.method
        if method == "OPTIONS":
            return (EmptyResponse(403) if cors is None else Response(status_code=200, headers=cors)), None
        if method in _BODY_METHODS:
            refused = _content_length_error(request, settings.max_request_bytes)
            if refused is not None:
                return refused, None
        raw_path = request.scope.get("raw_path") or quote(request.scope["path"]).encode()
        match = self.router.resolve(method, raw_path.decode("latin-1"))
        if match.route is None:
            return PlainTextResponse(NOT_FOUND_TEXT, 404), None
        request.scope["path_params"] = match.params
        request.scope["hermes.route"] = match.route
        if match.endpoint is None:
            return PlainTextResponse(METHOD_NOT_ALLOWED_TEXT, 405, {"Allow": match.route.allow}), match.route
        try:
            if self.services.faults is None:
                response = await match.endpoint(request, self.services)
            else:
                response = await call_with_faults(self.services, match.endpoint, request, match.route.name)
        except ClientLeft:
            raise  # the pipeline ends the request (see _http)
        except Exception as exc:  # noqa: BLE001 - mapped below, or reported as a bug
            response = error_response(exc) or self._crash(exc, request, match.route)
        if cors:
            response.headers.update(cors)
        return response, match.route

    @staticmethod
    def _crash(exc: Exception, request: Request, route: Route) -> Response:
        log_failure(exc, request.method, route.template, request.scope["hermes.request_id"])
        return PlainTextResponse(SERVER_ERROR_TEXT, 500)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


def create_app(settings: Settings, **kwargs: Any) -> HermesApp:
    """Build the ASGI app for `settings`."""
    return HermesApp(settings, **kwargs)
