"""The deliberate deviations from 0.19.0 that are answers (docs/differences.md): their error types,
and what 0.19.0 answers instead.

hermes-server raises an error whose type says which deviation it is (a `Deviation` subclass
here, or an edge or domain error type), and `SWAPS` says what 0.19.0 answers instead. Each
quirk is one unit of the app (hermes_server/units/): while its quirk is on (`--upstream-quirks`),
the unit swaps in the rows `swap_rows` gives for it, once, when the app is built; a quirk left
off adds no row, so the request path never asks. The deviations that are behaviours (D2, D3, D6's
instructions, D9, D10) are units that set a strategy instead; D11 (request heads) is decided
by the transport before the app (cli/transport.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from hermes_server.domain.errors import AgentFailed, StorageFault
from hermes_server.domain.jobs import JobError, JobInputError
from hermes_server.domain.openai_messages import MessagesError
from hermes_server.domain.quirks import Quirk
from hermes_server.http.errors import ChunkedBodyTooLarge, ErrorMap, Handler, UndecodableBearer, invalid_json
from hermes_server.http.responses import SERVER_ERROR_TEXT, PlainTextResponse


class Deviation(Exception):
    """hermes-server's answer (`error`, rendered as usual) where 0.19.0 answers otherwise;
    the subclass says which deviation it is."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class LongCreateTitle(Deviation):
    """D1: a create title over 100 characters (0.19.0 crashes; PATCH and fork refuse it as we do)."""


class CrashingInput(Deviation):
    """D6: input 0.19.0 crashes on (lone surrogates, non-object bodies where its handler
    assumes one, a fork whose source went away)."""


def upstream_crash() -> Response:
    """aiohttp's answer to an unhandled exception in a handler."""
    return PlainTextResponse(SERVER_ERROR_TEXT, 500)


# 0.19.0's answer to one error, given hermes-server's own map; None where 0.19.0 answers as we do.
Upstream = Callable[[Any, ErrorMap], Response | None]


def _crash(exc: Any, base: ErrorMap) -> Response:
    return upstream_crash()


@dataclass(frozen=True)
class Swap:
    """While `quirk` is on, errors of type `error` get 0.19.0's answer instead of hermes-server's."""

    quirk: Quirk
    error: type[BaseException]
    upstream: Upstream = _crash


SWAPS: tuple[Swap, ...] = (
    Swap(Quirk.TITLE_TOO_LONG_500, LongCreateTitle),
    # 0.19.0 reads a chunked body whole and then fails to parse what it kept.
    Swap(Quirk.CHUNKED_OVER_LIMIT_400, ChunkedBodyTooLarge, lambda exc, base: base.render(invalid_json())),
    Swap(Quirk.UNDECODABLE_BEARER_500, UndecodableBearer),
    Swap(Quirk.AGENT_FAILURE_500, AgentFailed),
    Swap(Quirk.BAD_INPUT_500, CrashingInput),
    Swap(Quirk.BAD_INPUT_500, MessagesError, lambda exc, base: upstream_crash() if exc.upstream_crashes else None),
    Swap(Quirk.STORAGE_FAILURE_500, StorageFault),
    # 0.19.0's jobs handlers catch the exception and answer its text as their JSON 500.
    Swap(Quirk.JOBS_BAD_INPUT_500, JobInputError, lambda exc, base: base.render(JobError(500, exc.message))),
)


def swap_rows(quirk: Quirk, base: ErrorMap) -> Mapping[type[BaseException], Handler]:
    """Rows to merge over `base` (the map hermes-server's own answers come from) while `quirk` is on."""
    return {swap.error: _swapped(swap.upstream, base) for swap in SWAPS if swap.quirk is quirk}


def _swapped(upstream: Upstream, base: ErrorMap) -> Handler:
    def answer(exc: Any) -> Response | None:
        given = upstream(exc, base)
        return base.render(exc) if given is None else given
    return answer
