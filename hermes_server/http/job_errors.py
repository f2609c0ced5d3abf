"""The error rows of the jobs API, whose envelope is a bare `{"error": "<text>"}`.

Kept beside the app's error table and merged into it when the app is composed; the
status of input 0.19.0 fails on with a Python exception depends on the quirks chosen.
"""

from __future__ import annotations

from typing import Any, Callable

from starlette.responses import Response

from hermes_server.domain.jobs import JobError, JobInputError, JobsFileError
from hermes_server.domain.quirks import Quirks
from hermes_server.domain.redact import redact
from hermes_server.http.responses import HermesJSONResponse


def bare_error(status: int, message: str) -> Response:
    """The jobs and cron envelope: one string, redacted like every error text."""
    return HermesJSONResponse({"error": redact(message)}, status)


def job_error_rows(quirks: Quirks) -> dict[type[BaseException], Callable[[Any], Response]]:
    """Error type → answer for the jobs routes under `quirks`."""
    bad_input_status = 500 if quirks.jobs_bad_input_500 else 400
    return {
        JobError: lambda exc: bare_error(exc.status, exc.message),
        JobInputError: lambda exc: bare_error(bad_input_status, exc.message),
        JobsFileError: lambda exc: bare_error(500, str(exc)),
    }
