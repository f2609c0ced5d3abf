"""ApiError, the edge's own answers, and the map that turns an error type into a response.

Handlers and the layers below them raise; nothing else formats an error body. Three
shapes exist upstream: the standard envelope `{"error": {message, type, param, code}}`,
the 401 without `param`, and the two-field session-key errors without `param` and
`code`. An exception is looked up by its class's MRO in an `ErrorMap` (as Starlette
looks up exception handlers), so a subclass gets its own answer or its parent's.
The product's own table (which error gets which answer) is `api/errors.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import Response

from hermes_server.domain.redact import redact
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


# The edge's own refusals. Each is a class, so that an error table can answer one
# differently from its parent (the product's deviations do: api/deviations.py).

class Unauthorized(ApiError):
    """The bearer key is missing or wrong."""

    def __init__(self) -> None:
        super().__init__(401, "Invalid API key", "invalid_api_key", shape="no_param")


class UndecodableBearer(Unauthorized):
    """The `Authorization` header is not UTF-8: a wrong key, never a 500."""


class BodyTooLarge(ApiError):
    """The body is over the limit.

    The body-limit middleware sits outside the security-header middleware upstream.
    `Connection: close` makes the server hang up instead of draining the rest of an
    oversized upload it will never use, so the client stops sending at once.
    """

    def __init__(self) -> None:
        super().__init__(413, "Request body too large.", "body_too_large", secure=False,
                         headers={"Connection": "close"})


class ChunkedBodyTooLarge(BodyTooLarge):
    """A body without Content-Length that grew past the limit while being read."""


def invalid_json() -> ApiError:
    return ApiError(400, "Invalid JSON in request body")


def not_an_object() -> ApiError:
    return ApiError(400, "Request body must be a JSON object")


# An error's answer; None says the map does not know it after all (the pipeline then reports a bug).
Handler = Callable[[Any], Response | None]


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

    def merged(self, rows: Mapping[type[BaseException], Handler]) -> ErrorMap:
        """This map with `rows` added over it."""
        return ErrorMap({**self.handlers, **rows})
