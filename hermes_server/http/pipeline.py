"""The request pipeline: one ASGI callable from the socket to the handler and back.

It mirrors upstream's middleware order, outermost first:
CORS → body-size limit → routing (framework 404/405) → the operation's security check →
handler → error mapping,
and writes one access line per request whatever happened. (The path is matched just
before the size check, which answers in the matched route's dialect; the order of the
answers is upstream's.) It is one small class rather than a middleware stack because
every request pays for each layer, and the order is easier to read in one place.

The security check is the one the matched `Operation` names, from the table of checks
the app is built with (Starlette's `requires` is the model), so no handler
authenticates by hand and /openapi.json cannot claim what the server does not do.
Optional layers (test control) wrap it once, when the app is composed; nothing here
asks whether they exist.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from hermes_server.config import Settings
from hermes_server.http.body import BODY_LIMIT_KEY, ClientLeft
from hermes_server.http.errors import ApiError, BodyTooLarge, ErrorMap
from hermes_server.http.logs import CLIENT_LEFT, log_access, log_failure, new_request_id, safe_id
from hermes_server.http.responses import (
    METHOD_NOT_ALLOWED_TEXT,
    NOT_FOUND_TEXT,
    SERVER_ERROR_TEXT,
    EmptyResponse,
    PlainTextResponse,
)
from hermes_server.http.routing import Route, Router
from hermes_server.http.sse import CORS_EXEMPT

log = logging.getLogger("hermes_server")

_BODY_METHODS = {"POST", "PUT", "PATCH"}
_CORS_METHODS = "GET, POST, DELETE, OPTIONS"
_CORS_HEADERS = "Authorization, Content-Type, Idempotency-Key"
# Refused origins already named in the log (forgotten all at once past this many).
_REMEMBERED_ORIGINS = 256


def shutting_down(drain_seconds: float) -> ApiError:
    """The answer of a request whose handler was still running when shutdown's grace ran out. It
    promises only what the turn drain does: a chat turn is stored if it finishes within the drain
    (--turn-drain), and cancelled unstored after it."""
    return ApiError(503, "Server is shutting down; the request ended before its answer was ready. A chat turn it "
                         f"started is stored only if it finishes within the next {drain_seconds:g} s; after that it "
                         "is cancelled and not stored.", "server_shutting_down", headers={"Connection": "close"})


# Where the pipeline leaves the matched route and the request id for outer layers and logs.
ROUTE_KEY = "hermes.route"
REQUEST_ID_KEY = "hermes.request_id"
# The session a request created or answered for, when the path does not name it (or names
# another: a compression continuation); the access line shows it.
SESSION_KEY = "hermes.session_id"


def note_session(request: Request, session_id: str) -> None:
    """Say which session this request is about, for its access line."""
    request.scope[SESSION_KEY] = session_id


def _note_answered_session(scope: Scope, start: Message) -> None:
    """Chat answers name their effective session in X-Hermes-Session-Id: the access line uses it."""
    for name, value in start.get("headers", ()):
        if name.lower() == b"x-hermes-session-id":
            scope[SESSION_KEY] = value.decode("latin-1")
            return


# A security scheme's check: returns when the request may go on, else raises the refusal
# (rendered by the route's error map, like any handler error).
Check = Callable[[Request], None]


def cors_headers(settings: Settings, origin: str, allowed: str) -> dict[str, str] | None:
    """Headers for an allowed browser origin (`allowed`: the request headers it may send), or None."""
    if not origin or not settings.cors_origins:
        return None
    base = {"Access-Control-Allow-Methods": _CORS_METHODS, "Access-Control-Allow-Headers": allowed}
    if "*" in settings.cors_origins:
        return {**base, "Access-Control-Allow-Origin": "*", "Access-Control-Max-Age": "600"}
    if origin not in settings.cors_origins:
        return None
    return {**base, "Access-Control-Allow-Origin": origin, "Vary": "Origin", "Access-Control-Max-Age": "600"}


def _origin_allowed(settings: Settings, origin: str) -> bool:
    if not origin:
        return True
    return bool(settings.cors_origins) and ("*" in settings.cors_origins or origin in settings.cors_origins)


def _content_length_error(request: Request, limit: int) -> ApiError | None:
    raw = request.headers.get("content-length")
    if raw is None:
        return None
    try:
        length = int(raw)
    except ValueError:
        return ApiError(400, "Invalid Content-Length header.", "invalid_content_length", secure=False)
    if length > limit:
        return BodyTooLarge()
    return None


class Pipeline:
    """The HTTP side of the app: `context` is handed to every handler as its second argument.

    `checks` maps each security scheme an operation may name to its check; a route naming
    a scheme without one is refused here, when the app is built. `extra_cors_headers` are
    request headers browsers may send besides the standard ones (a dialect's own key header).
    """

    def __init__(self, settings: Settings, router: Router, context: Any, errors: ErrorMap, *,
                 checks: Mapping[str, Check], extra_cors_headers: Sequence[str] = ()) -> None:
        unchecked = sorted({f"{route.template} {name}: {method.operation.security}"
                            for route in router.routes for name, method in route.methods.items()
                            if method.operation.security is not None and method.operation.security not in checks})
        if unchecked:
            raise ValueError(f"operations name a security scheme no check is given for: {', '.join(unchecked)}")
        self.settings = settings
        self.router = router
        self.context = context
        self.errors = errors
        self.checks = dict(checks)
        self.cors_allowed = ", ".join((_CORS_HEADERS, *extra_cors_headers))
        self.refused_origins: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request_id = new_request_id()
        scope[REQUEST_ID_KEY] = request_id
        status = 0
        completed = False

        async def send_and_note(message: Message) -> None:
            nonlocal status, completed
            if message["type"] == "http.response.start":
                status = message["status"]
                _note_answered_session(scope, message)
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                completed = True
            await send(message)

        route: Route | None = None
        try:
            response, route = await self.dispatch(Request(scope, receive))
            await response(scope, receive, send_and_note)
        except ClientLeft:  # gone mid-body: nothing to answer, nothing went wrong here
            route = scope.get(ROUTE_KEY)
            status = CLIENT_LEFT
            log.debug("%s %s: the client left before its request body was read (request %s)",
                      scope["method"], route.template if route else "-", request_id)
        except Exception as exc:  # noqa: BLE001 - a bug while sending a response: report once, end cleanly
            log_failure(exc, scope["method"], route.template if route else None, request_id)
            if not completed:
                await self._finish(send_and_note, started=status != 0)
        except asyncio.CancelledError:
            # Shutdown's grace period ran out: uvicorn cancels what is still running only
            # to end it. End a stream with its last chunk (the client sees a closed stream,
            # not a reset), answer a request that had not started its response with a 503
            # saying so (and what becomes of a chat turn it started), and return
            # normally: the request is over, not failed.
            route = scope.get(ROUTE_KEY)
            if not completed:
                if status:
                    await self._finish(send_and_note, started=True)
                else:
                    await self._shutting_down(send_and_note, self.settings.turn_drain_seconds)
            log.info("%s %s: ended by shutdown after the grace period (request %s)", scope["method"],
                     route.template if route else "-", request_id)
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        else:
            if not completed:  # a stream that stopped early (its client left, or shutdown)
                await self._finish(send_and_note, started=status != 0)
        finally:
            session_id = scope.get(SESSION_KEY) or (scope.get("path_params", {}).get("session_id") if route else None)
            log_access(scope["method"], route.template if route else None, status,
                       time.perf_counter() - started, session_id, request_id)

    @staticmethod
    async def _finish(send: Send, *, started: bool) -> None:
        """Complete a response the app left open: upstream's bare 500 before any byte, else the last chunk."""
        try:
            if started:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await PlainTextResponse(SERVER_ERROR_TEXT, 500)({"type": "http"}, _no_receive, send)
        except Exception:
            log.debug("could not finish a response", exc_info=True)

    @staticmethod
    async def _shutting_down(send: Send, drain_seconds: float) -> None:
        try:
            await shutting_down(drain_seconds).response()({"type": "http"}, _no_receive, send)
        except Exception:
            log.debug("could not answer a request cut by shutdown", exc_info=True)

    def _say_refused(self, origin: str) -> None:
        """The answer to a refused browser origin is upstream's empty 403, which tells its developer
        nothing; the log says why, once per origin (the access line still comes every time)."""
        if origin in self.refused_origins:
            return
        if len(self.refused_origins) >= _REMEMBERED_ORIGINS:
            self.refused_origins.clear()
        self.refused_origins.add(origin)
        allowed = ", ".join(self.settings.cors_origins) or "none"
        log.warning("refused a browser request from Origin %s with 403: not in --cors-origins (allowed: %s); "
                    "add it with --cors-origins or API_SERVER_CORS_ORIGINS", safe_id(origin), allowed,
                    extra={"fields": {"origin": safe_id(origin)}})

    async def dispatch(self, request: Request) -> tuple[Response, Route | None]:
        """Run the pipeline for one request; returns the response and the matched route."""
        settings = self.settings
        origin = request.headers.get("origin", "")
        if not _origin_allowed(settings, origin):
            self._say_refused(origin)
            return EmptyResponse(403), None  # empty, as upstream's
        cors = cors_headers(settings, origin, self.cors_allowed)
        method = request.method
        if method == "OPTIONS":
            return (EmptyResponse(403) if cors is None else Response(status_code=200, headers=cors)), None
        # Routing only reads the path, so it may come first: the Content-Length refusal is
        # then worded by the matched route's dialect (any path of no dialect: Hermes's).
        raw_path = request.scope.get("raw_path") or quote(request.scope["path"]).encode()
        match = self.router.resolve(method, raw_path.decode("latin-1"))
        if method in _BODY_METHODS:
            refused = _content_length_error(request, settings.max_request_bytes)
            if refused is not None:
                errors = (match.route.errors if match.route else None) or self.errors
                return errors.render(refused) or refused.response(), None
        if match.route is None:
            return PlainTextResponse(NOT_FOUND_TEXT, 404), None
        request.scope["path_params"] = match.params
        request.scope[ROUTE_KEY] = match.route
        if match.method is None:
            return PlainTextResponse(METHOD_NOT_ALLOWED_TEXT, 405, {"Allow": match.route.allow}), match.route
        request.scope[BODY_LIMIT_KEY] = settings.max_request_bytes
        try:
            security = match.method.operation.security
            if security is not None:
                self.checks[security](request)
            response = await match.method.endpoint(request, self.context)
        except ClientLeft:
            raise  # the pipeline ends the request (see __call__)
        except Exception as exc:  # noqa: BLE001 - mapped below, or reported as a bug
            errors = match.route.errors or self.errors
            response = errors.render(exc) or self._crash(exc, request, match.route)
        if cors and not getattr(response, CORS_EXEMPT, False):
            response.headers.update(cors)
        return response, match.route

    @staticmethod
    def _crash(exc: Exception, request: Request, route: Route) -> Response:
        log_failure(exc, request.method, route.template, request.scope[REQUEST_ID_KEY])
        return PlainTextResponse(SERVER_ERROR_TEXT, 500)


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}
