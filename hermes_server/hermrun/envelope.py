"""herm.run's responses: compact UTF-8 JSON, and the one table of typed errors to them.

Every herm.run refusal is `{"error": {"type", "message", "param"}}` with the status its
type implies; nothing else formats one. `HERM_RUN_ERRORS` is the dialect's `ErrorMap`:
the herm.run routes carry it, so the pipeline (the Content-Length check included) and
the fault layer answer in this envelope on these routes. The Hermes routes' envelope
and security headers are upstream Hermes's, not herm.run's, and are not used here.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.responses import Response

from hermes_server.domain.errors import DatabaseUnavailable
from hermes_server.hermrun.errors import (
    HermRunError,
    InvalidState,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)
from hermes_server.http.errors import ApiError, ErrorMap, InjectedStatus
from hermes_server.http.responses import ExactResponse

log = logging.getLogger("hermes_server.hermrun")

JSON_TYPE = "application/json"
TOO_LARGE_MESSAGE = "request body is larger than the server's limit"
UNAVAILABLE_MESSAGE = "the session store is unavailable; try again shortly"

# The error type and wording each status has in this dialect, for answers the edge or an
# injected fault gives without naming them.
_BY_STATUS: dict[int, tuple[str, str]] = {
    cls.status: (cls.type, message) for cls, message in (
        (ValidationFailed, "invalid request"),
        (Unauthorized, "missing or invalid x-api-key header"),
        (NotFound, "not found"),
        (InvalidState, "the session's status does not allow this operation"),
        (PayloadTooLarge, TOO_LARGE_MESSAGE),
        (RateLimited, "conversation allowance exhausted; retry later"),
        (Unavailable, UNAVAILABLE_MESSAGE),
    )
}


def dumps(payload: Any) -> bytes:
    """Compact UTF-8 JSON; a character UTF-8 cannot carry (a lone surrogate echoed from a
    request) is written as its `\\uXXXX` escape, which is the same JSON string."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


class HermRunJSON(ExactResponse):
    media_type = JSON_TYPE

    def __init__(self, payload: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(dumps(payload), status_code=status_code, headers=headers)


def envelope(status: int, type_: str, message: str, param: str | None = None,
             headers: dict[str, str] | None = None) -> Response:
    return HermRunJSON({"error": {"type": type_, "message": message, "param": param}}, status, headers or None)


def error_response(exc: HermRunError) -> Response:
    return envelope(exc.status, exc.type, exc.message, exc.param, exc.headers)


def _default(status: int) -> tuple[str, str]:
    return _BY_STATUS.get(status, ("api_error" if status < 500 else "server_error", f"HTTP {status}"))


def _edge_error(exc: ApiError) -> Response:
    """An answer the shared edge gives (the body limit, a bad Content-Length), in this envelope."""
    if exc.code == "body_too_large":  # keeps `Connection: close`: the rest of the upload is not read
        return envelope(PayloadTooLarge.status, PayloadTooLarge.type, TOO_LARGE_MESSAGE, None, exc.headers)
    type_, message = _default(exc.status)
    return envelope(exc.status, type_, exc.message if exc.status == 400 else message, exc.param, exc.headers)


def _injected(exc: InjectedStatus) -> Response:
    """A `status` fault: what it names, else this dialect's type and wording for the status
    (a 429 keeps its Retry-After)."""
    type_, message = _default(exc.status)
    return envelope(exc.status, exc.type if "type" in exc.given else type_,
                    exc.message if "message" in exc.given else message, exc.param, exc.headers)


def _unavailable(exc: DatabaseUnavailable) -> Response:
    log.warning("herm-run.db unavailable: %s", type(exc).__name__)
    return error_response(Unavailable(UNAVAILABLE_MESSAGE))


HERM_RUN_ERRORS = ErrorMap({
    HermRunError: error_response,
    DatabaseUnavailable: _unavailable,
    InjectedStatus: _injected,
    ApiError: _edge_error,
})
