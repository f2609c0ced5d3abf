"""What a client is told of a turn that failed: the failure's own words, when they are meant for it.

Upstream reports a failed turn with the (redacted) text of whatever its agent raised: a run's
`error` and `run.failed`, a session stream's `error` event, a streamed completion's finish chunk, a
streamed response's `response.failed`, the 500 of a waiting client (0.19.0's
`gateway/platforms/api_server.py`, `_redact_api_error_text(exc)`; docs/differences.md). Here the
failures a turn reports in their own words are the agent's (`AgentError`: its model, its script),
storage's, and those 0.19.0's own code has on input it accepted (`UpstreamCrash`). Any other
exception is a fault of hermes-server itself: its text (a Python internal) never reaches a client,
which is told `UNEXPECTED`, and the log gets its traceback once.
"""

from __future__ import annotations

import logging

from hermes_server.agents.base import AgentError
from hermes_server.domain.errors import DatabaseUnavailable, UpstreamCrash
from hermes_server.domain.redact import redact

log = logging.getLogger("hermes_server.chat")

# The failures whose text is meant for the client.
REPORTED = (AgentError, DatabaseUnavailable, UpstreamCrash)
UNEXPECTED = "The agent turn failed unexpectedly (the server's log says why)."


def reported(exc: BaseException) -> str:
    """The text a client is shown for the failure `exc` of a turn (redacted); an unexpected one is
    logged with its traceback, as any fault of the server is."""
    if isinstance(exc, REPORTED):
        return redact(str(exc))
    log.error("a turn failed unexpectedly (%s)", type(exc).__name__, exc_info=(type(exc), exc, exc.__traceback__))
    return UNEXPECTED


def kind(exc: BaseException) -> str:
    """The error type a streamed completion's finish chunk names: the Python error upstream raised."""
    if isinstance(exc, UpstreamCrash):
        return exc.kind
    return type(exc).__name__ if isinstance(exc, REPORTED) else "server_error"
