"""The error-table rows that choose, once per app, between hermes-server's answers and 0.19.0's.

`Deviation` carries both; the other rows replace hermes-server's answer to an error
type with 0.19.0's bare text/plain 500 when the quirk of that deviation is on.
"""

from __future__ import annotations

from typing import Any, Callable

from starlette.responses import Response

from hermes_server.domain.errors import AgentFailed, StorageFault
from hermes_server.domain.openai_messages import MessagesError
from hermes_server.domain.quirks import Deviation, Quirks
from hermes_server.http.errors import ErrorMap, invalid_json
from hermes_server.http.responses import SERVER_ERROR_TEXT, PlainTextResponse

Handler = Callable[[Any], Response]


def upstream_crash() -> Response:
    """aiohttp's answer to an unhandled exception in a handler."""
    return PlainTextResponse(SERVER_ERROR_TEXT, 500)


def deviation_rows(quirks: Quirks, base: ErrorMap) -> dict[type[BaseException], Handler]:
    """Rows to merge over `base` (the map hermes-server's own answers come from)."""
    def deviation(exc: Deviation) -> Response:
        if not getattr(quirks, exc.quirk):
            answer = base.render(exc.error)
            assert answer is not None, exc.error
            return answer
        return upstream_crash() if exc.upstream == "crash" else invalid_json().response()

    def unless(switch: bool, error_type: type[BaseException], crashes: Callable[[Any], bool] = lambda exc: True) -> Handler:
        own = base.handlers[error_type]
        return lambda exc: upstream_crash() if switch and crashes(exc) else own(exc)

    return {
        Deviation: deviation,
        AgentFailed: unless(quirks.agent_failure_500, AgentFailed),
        StorageFault: unless(quirks.storage_failure_500, StorageFault),
        MessagesError: unless(quirks.bad_input_500, MessagesError, lambda exc: exc.upstream_crashes),
    }
