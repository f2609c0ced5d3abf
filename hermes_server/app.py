"""create_app(settings): the ASGI application, its route table and the request pipeline.

The pipeline mirrors upstream's middleware order, outermost first:
CORS → body-size limit → routing (framework 404/405) → handler → error mapping.
It is one small function rather than a middleware stack because every request
pays for each layer, and the order is easier to read in one place.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from hermes_server.config import Settings
from hermes_server.http.errors import ApiError, body_too_large, error_response
from hermes_server.http.responses import (
    METHOD_NOT_ALLOWED_TEXT,
    NOT_FOUND_TEXT,
    SERVER_ERROR_TEXT,
    EmptyResponse,
    PlainTextResponse,
)
from hermes_server.http.routing import Route, Router
from hermes_server.routes import discovery, sessions
from hermes_server.services import Services
from hermes_server.store.db import Database

log = logging.getLogger("hermes_server")
access_log = logging.getLogger("hermes_server.access")

_BODY_METHODS = {"POST", "PUT", "PATCH"}
_CORS_BASE = {
    "Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key",
}


def build_routes() -> list[Route]:
    """Every served path, with its name (used in logs) and methods."""
    return [
        Route("health", "/health", {"GET": discovery.health}),
        Route("health", "/v1/health", {"GET": discovery.health}),
        Route("sessions", "/api/sessions", {"GET": sessions.list_sessions, "POST": sessions.create_session}),
        Route("session", "/api/sessions/{session_id}", {
            "GET": sessions.get_session,
            "PATCH": sessions.patch_session,
            "DELETE": sessions.delete_session,
        }),
        Route("session_messages", "/api/sessions/{session_id}/messages", {"GET": sessions.list_messages}),
        Route("session_fork", "/api/sessions/{session_id}/fork", {"POST": sessions.fork_session}),
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
        self.router = Router(build_routes())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.services.db.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = {"code": 0}

        async def send_and_note(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        request = Request(scope, receive)
        route_name = "-"
        try:
            response, route_name = await self.dispatch(request)
            await response(scope, receive, send_and_note)
        finally:
            access_log.info(
                "%s %s %s %.1fms session=%s",
                scope["method"], route_name, status["code"],
                (time.perf_counter() - started) * 1000,
                scope.get("path_params", {}).get("session_id", "-") if route_name != "-" else "-",
            )

    async def dispatch(self, request: Request) -> tuple[Response, str]:
        """Run the pipeline for one request; returns the response and the route name."""
        settings = self.settings
        origin = request.headers.get("origin", "")
        if not _origin_allowed(settings, origin):
            return EmptyResponse(403), "-"
        cors = cors_headers(settings, origin)
        method = request.method
        if method == "OPTIONS":
            return (EmptyResponse(403) if cors is None else Response(status_code=200, headers=cors)), "-"
        if method in _BODY_METHODS:
            refused = _content_length_error(request, settings.max_request_bytes)
            if refused is not None:
                return refused, "-"
        raw_path = request.scope.get("raw_path") or quote(request.scope["path"]).encode()
        match = self.router.resolve(method, raw_path.decode("latin-1"))
        if match.route is None:
            return PlainTextResponse(NOT_FOUND_TEXT, 404), "-"
        if match.endpoint is None:
            return PlainTextResponse(METHOD_NOT_ALLOWED_TEXT, 405, {"Allow": match.route.allow}), match.route.name
        request.scope["path_params"] = match.params
        try:
            response = await match.endpoint(request, self.services)
        except Exception as exc:  # noqa: BLE001 - mapped below, or reported as a bug
            response = error_response(exc) or self._crash(exc, request)
        if cors:
            response.headers.update(cors)
        return response, match.route.name

    def _crash(self, exc: Exception, request: Request) -> Response:
        request_id = uuid.uuid4().hex[:12]
        log.error("request %s %s failed (request id %s)", request.method, request.url.path, request_id, exc_info=exc)
        return PlainTextResponse(SERVER_ERROR_TEXT, 500)


def create_app(settings: Settings, **kwargs: Any) -> HermesApp:
    """Build the ASGI app for `settings`."""
    return HermesApp(settings, **kwargs)
