"""ApiError, and the one table that turns every error type into upstream's envelope.

Handlers and the layers below them raise; nothing else formats an error body. Three
shapes exist upstream: the standard envelope `{"error": {message, type, param, code}}`,
the 401 without `param`, and the two-field session-key errors without `param` and
`code`. An exception is looked up by its class's MRO in an `ErrorMap` (as Starlette
looks up exception handlers), so a subclass gets its own answer or its parent's.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from starlette.responses import Response

from hermes_server.domain.content import ContentError
from hermes_server.domain.errors import (
    AgentFailed,
    CompletionFailed,
    DatabaseUnavailable,
    DocumentError,
    SessionExists,
    SessionGone,
    StorageFault,
    TitleConflict,
    TooManyRuns,
)
from hermes_server.domain.openai_messages import MessagesError
from hermes_server.domain.quirks import Deviation
from hermes_server.domain.redact import redact
from hermes_server.domain.titles import TitleTooLong
from hermes_server.http.responses import HermesJSONResponse

INVALID_REQUEST = "invalid_request_error"


class ApiError(Exception):
    """A client-visible error with the status and envelope upstream gives."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        param: str | None = None,
        *,
        type_: str = INVALID_REQUEST,
        shape: str = "standard",
        headers: dict[str, str] | None = None,
        secure: bool = True,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.type = type_
        self.shape = shape
        self.headers = headers
        self.secure = secure

    def body(self) -> dict[str, Any]:
        """The JSON envelope, keys in upstream's order, message redacted."""
        error: dict[str, Any] = {"message": redact(self.message), "type": self.type}
        if self.shape == "standard":
            error["param"] = self.param
            error["code"] = self.code
        elif self.shape == "no_param":
            error["code"] = self.code
        return {"error": error}

    def response(self) -> Response:
        """Render as an HTTP response."""
        return HermesJSONResponse(self.body(), self.status, headers=self.headers, secure=self.secure)


class InjectedStatus(ApiError):
    """The answer of a `status` fault (test control). `given` names the fields the fault
    set itself (`message`, `type`, …); a dialect's error map fills in the others its own
    way, while Hermes's answers it as the ApiError it is."""

    def __init__(self, status: int, message: str, code: str | None, param: str | None, *, type_: str,
                 headers: dict[str, str] | None, given: frozenset[str]) -> None:
        super().__init__(status, message, code, param, type_=type_, headers=headers)
        self.given = given


# The named errors of the session API, so the wording lives in one place.

def invalid_json() -> ApiError:
    return ApiError(400, "Invalid JSON in request body")


def not_an_object() -> ApiError:
    return ApiError(400, "Request body must be a JSON object")


def unauthorized() -> ApiError:
    return ApiError(401, "Invalid API key", "invalid_api_key", shape="no_param")


def body_too_large() -> ApiError:
    # The body-limit middleware sits outside the security-header middleware upstream.
    # `Connection: close` makes the server hang up instead of draining the rest of an
    # oversized upload it will never use, so the client stops sending at once.
    return ApiError(413, "Request body too large.", "body_too_large", secure=False, headers={"Connection": "close"})


def db_unavailable() -> ApiError:
    return ApiError(503, "Session database unavailable", "session_db_unavailable")


def storage_refused(reason: str, write: bool, written: str | None = None) -> ApiError:
    """A full disk, a read-only file or an I/O error under the open database: what happened, and
    (for a write) what is stored: nothing, as its transaction was rolled back, or what the
    request's earlier writes stored."""
    outcome = f"; {written or 'nothing was written'}" if write else ""
    return ApiError(503, f"Session database unavailable: {reason}{outcome}", "session_db_unavailable")


def session_not_found(session_id: str) -> ApiError:
    return ApiError(404, f"Session not found: {session_id}", "session_not_found")


def session_exists(session_id: str) -> ApiError:
    return ApiError(409, f"Session already exists: {session_id}", "session_exists")


def invalid_session_id(message: str = "Invalid session ID") -> ApiError:
    return ApiError(400, message, "invalid_session_id")


def invalid_title(message: str) -> ApiError:
    return ApiError(400, message, "invalid_title")


def invalid_field(param: str, message: str) -> Deviation:
    """D6: input upstream answers with a bare 500 gets a 400 naming the field."""
    return Deviation("bad_input_500", ApiError(400, message, None, param))


def crashing_non_object() -> Deviation:
    """D6: a body that is not a JSON object where 0.19.0's handler crashes on it (its bare 500)."""
    return Deviation("bad_input_500", not_an_object())


def server_error(message: str = "Internal server error") -> ApiError:
    """D5: an exception inside the agent gets the standard envelope, type server_error."""
    return ApiError(500, message, None, None, type_="server_error")


def _messages_error(exc: MessagesError) -> ApiError:
    if exc.bare:  # upstream's two-field envelope for the messages array and the session-id header
        return ApiError(400, exc.message, shape="two_field")
    return ApiError(400, exc.message, exc.code, exc.param)


Handler = Callable[[Any], Response]


class ErrorMap:
    """Exception type → the response it gets, looked up along the exception's MRO.

    A dialect (another product's API served beside Hermes') brings its own map for
    its own envelope; the pipeline renders with the map of the route that raised.
    """

    def __init__(self, handlers: Mapping[type[BaseException], Handler]) -> None:
        self.handlers = dict(handlers)

    def render(self, exc: BaseException) -> Response | None:
        """The answer for `exc`, or None when no handler knows it (a genuine bug)."""
        for cls in type(exc).__mro__:
            handler = self.handlers.get(cls)
            if handler is not None:
                return handler(exc)
        return None


def _api(build: Callable[[Any], ApiError]) -> Handler:
    return lambda exc: build(exc).response()


# Every error the Hermes routes can raise, and upstream's answer to it.
HERMES_ERRORS = ErrorMap({
    ApiError: _api(lambda exc: exc),
    DatabaseUnavailable: _api(lambda exc: db_unavailable()),
    StorageFault: _api(lambda exc: storage_refused(exc.reason, exc.write, exc.written)),
    SessionGone: _api(lambda exc: session_not_found(exc.session_id)),
    SessionExists: _api(lambda exc: session_exists(exc.session_id)),
    TitleConflict: _api(lambda exc: invalid_title(str(exc))),
    TitleTooLong: _api(lambda exc: invalid_title(str(exc))),
    ContentError: _api(lambda exc: ApiError(400, exc.message, exc.code, exc.param)),
    MessagesError: _api(_messages_error),
    DocumentError: _api(lambda exc: ApiError(400, str(exc), exc.code, exc.path)),
    AgentFailed: _api(lambda exc: server_error(str(exc.cause) or "Internal server error")),
    CompletionFailed: _api(lambda exc: ApiError(500, f"Internal server error: {exc.cause}", type_="server_error")),
    TooManyRuns: _api(lambda exc: ApiError(429, str(exc), "rate_limit_exceeded", type_="rate_limit_error",
                                           headers={"Retry-After": "1"})),
})
