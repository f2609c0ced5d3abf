"""The Hermes product's error table: every error its routes raise, and upstream's answer to it.

The named errors of the session API live here, so the wording lives in one place. The
jobs API answers in its own bare envelope, `{"error": "<text>"}`. The app composes the
table once, when it is built, with the rows the served units swap in (a newer release's
401, the deviations `--upstream-quirks` switches to 0.19.0's answers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from hermes_server.api.deviations import CrashingInput, Deviation
from hermes_server.chat import failures
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
from hermes_server.domain.jobs import JobError, JobInputError, JobsFileError
from hermes_server.domain.model_lock import LockRefused
from hermes_server.domain.openai_messages import MessagesError
from hermes_server.domain.redact import redact
from hermes_server.domain.titles import TitleTooLong, has_lone_surrogate
from hermes_server.http.errors import ApiError, ErrorMap, Handler, not_an_object
from hermes_server.http.responses import HermesJSONResponse


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


def invalid_pagination(message: str) -> ApiError:
    """0.20.4's 400 for a refused message-paging parameter (domain/paging.py)."""
    return ApiError(400, message, "invalid_pagination")


def invalid_title(message: str) -> ApiError:
    return ApiError(400, message, "invalid_title")


def invalid_field(param: str, message: str) -> CrashingInput:
    """D6: input upstream answers with a bare 500 gets a 400 naming the field."""
    return CrashingInput(ApiError(400, message, None, param))


def response_not_found(response_id: str) -> ApiError:
    return ApiError(404, f"Response not found: {response_id}")


def previous_response_not_found(previous: Any) -> Exception:
    """The 404 of an unknown `previous_response_id`; D6 when 0.19.0 crashes looking it up (a lone surrogate)."""
    error = ApiError(404, f"Previous response not found: {previous}")
    return CrashingInput(error) if isinstance(previous, str) and has_lone_surrogate(previous) else error


def invalid_response_json() -> ApiError:
    """`POST /v1/responses`' own refusal of a body that is not JSON: upstream's two-field envelope."""
    return ApiError(400, "Invalid JSON in request body", shape="two_field")


def invalid_run_json() -> ApiError:
    """The runs routes' own refusal of a body that is not JSON (submit, approval): no code."""
    return ApiError(400, "Invalid JSON")


def crashing_non_object() -> CrashingInput:
    """D6: a body that is not a JSON object where 0.19.0's handler crashes on it (its bare 500)."""
    return CrashingInput(not_an_object())


def server_error(message: str = "Internal server error") -> ApiError:
    """D5: an exception inside the agent gets the standard envelope, type server_error."""
    return ApiError(500, message, None, None, type_="server_error")


def bare_error(status: int, message: str) -> Response:
    """The jobs and cron envelope: one string, redacted like every error text."""
    return HermesJSONResponse({"error": redact(message)}, status)


class InvalidFireToken(Exception):
    """The managed-cron fire webhook's own refusal (its token is not the API key)."""


def _messages_error(exc: MessagesError) -> ApiError:
    if exc.bare:  # upstream's two-field envelope for the messages array and the session-id header
        return ApiError(400, exc.message, shape="two_field")
    return ApiError(400, exc.message, exc.code, exc.param)


def _api(build: Callable[[Any], ApiError]) -> Handler:
    return lambda exc: build(exc).response()


def _deviation(exc: Deviation) -> Response | None:
    """hermes-server's own answer to a deviation (0.19.0's, when its quirk is on, is a row over this)."""
    return HERMES_ERRORS.render(exc.error)


HERMES_ERRORS = ErrorMap({
    ApiError: _api(lambda exc: exc),
    Deviation: _deviation,
    DatabaseUnavailable: _api(lambda exc: db_unavailable()),
    StorageFault: _api(lambda exc: storage_refused(exc.reason, exc.write, exc.written)),
    SessionGone: _api(lambda exc: session_not_found(exc.session_id)),
    SessionExists: _api(lambda exc: session_exists(exc.session_id)),
    TitleConflict: _api(lambda exc: invalid_title(str(exc))),
    TitleTooLong: _api(lambda exc: invalid_title(str(exc))),
    ContentError: _api(lambda exc: ApiError(400, exc.message, exc.code, exc.param)),
    MessagesError: _api(_messages_error),
    DocumentError: _api(lambda exc: ApiError(400, str(exc), exc.code, exc.path)),
    AgentFailed: _api(lambda exc: server_error(failures.reported(exc.cause) or "Internal server error")),
    CompletionFailed: _api(lambda exc: ApiError(500, f"Internal server error: {failures.reported(exc.cause)}",
                                                type_="server_error")),
    TooManyRuns: _api(lambda exc: ApiError(429, str(exc), "rate_limit_exceeded", type_="rate_limit_error",
                                           headers={"Retry-After": "1"})),
    LockRefused: _api(lambda exc: ApiError(exc.status, exc.message, exc.code, exc.param)),
    JobError: lambda exc: bare_error(exc.status, exc.message),
    JobInputError: lambda exc: bare_error(400, exc.message),
    JobsFileError: lambda exc: bare_error(500, str(exc)),
    InvalidFireToken: lambda exc: bare_error(401, "invalid fire token"),
})
