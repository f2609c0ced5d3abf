"""The fault kinds of `/_fixture/faults`, one class each, and their registry (`KINDS`).

A kind says which keys of a fault document it takes (`keys`), checks and reads them
(`parse`), where it acts, and what it does there. Around any route's handler (`point`
None), its effect is `act`. Inside the use cases, at the hook `point` they ask
(chat/hooks.py), it `reaches` the served operations that say, by their effect or their
streaming, that they get there; `applies` says whether a fault is for the place asked
about (fork's step) and `action` is its effect there: a wait, an error that stops or
fails the operation, a cut stream. testing/faults.py parses a document with them; the
fault layer calls `act` and, at each hook point, the `action` of each kind acting there.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Protocol

from starlette.responses import Response

from hermes_server.chat.hooks import CARRY_ON, Action, Point
from hermes_server.domain.errors import DatabaseUnavailable
from hermes_server.http.errors import ErrorMap, InjectedStatus
from hermes_server.http.routing import Effect, Operation
from hermes_server.store.storage_faults import REASONS
from hermes_server.testing.request_context import RequestContext
from hermes_server.testing.storage_gate import StorageGate
from hermes_server.testing.transport import ConnectionReset, InjectedDisconnect, abort_connection
from hermes_server.testing.validate import Checker, child

FORK_STEPS = 4
MAX_MILLISECONDS = 600_000
STATUS_KEYS = ("status", "message", "code", "type", "param", "headers", "retry_after")
# The statuses that tell a client when to come back, as the run cap's 429 does.
RETRY_STATUSES = (429, 503)

# What a `status` fault answers when only the status is given: upstream's own wording where
# upstream has one (503 storage, 429 concurrency cap, D5's 500), a neutral one otherwise.
_STATUS_DEFAULTS: dict[int, dict[str, Any]] = {
    503: {"message": "Session database unavailable", "code": "session_db_unavailable", "type": "invalid_request_error"},
    500: {"message": "Internal server error", "code": None, "type": "server_error"},
    429: {"message": "Too many concurrent runs (max 1)", "code": "rate_limit_exceeded", "type": "rate_limit_error"},
}


class Fault(Protocol):
    """What a kind reads of the installed fault that fired (testing/faults.py's `Fault`)."""

    id: str
    params: dict[str, Any]

    def error(self) -> InjectedStatus: ...


class Wait(Action):
    """Wait `seconds` at the step, then go on."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def happen(self) -> None:
        await asyncio.sleep(self.seconds)


class Fail(Action):
    """Raise `error` at the step: the operation stops or fails there as if it had raised it."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def happen(self) -> None:
        raise self.error


class Cut(Action):
    """A stream's first `events` events, then a dropped connection (the request's, in `scope`)."""

    def __init__(self, events: int, scope: Any) -> None:
        self.events, self.scope = events, scope

    def frames(self, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        return _cut_after(frames, self.events, self.scope)


async def _cut_after(frames: AsyncIterator[bytes], events: int, scope: Any) -> AsyncIterator[bytes]:
    sent = 0
    try:
        async for frame in frames:
            if not frame.startswith(b":"):  # an event (`event:` or bare `data:`), not a comment
                if sent >= events:
                    break
                sent += 1
            yield frame
        else:
            return  # the stream ended before the cut point: nothing to cut
        await abort_connection(scope)
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


def _header_text(value: Any) -> bool:
    """Whether `value` can be sent as a header name or value (HTTP/1.1 is Latin-1, one line)."""
    if not isinstance(value, str) or any(ch in value for ch in "\r\n\x00"):
        return False
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _status_params(check: Checker, spec: Mapping[str, Any], path: str, default_status: int | None) -> dict[str, Any]:
    status = spec.get("status", default_status)
    if status is None:
        return {}
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        check.fail(child(path, "status"), f"must be an HTTP error status (400-599), got {status!r}")
        return {}
    defaults = _STATUS_DEFAULTS.get(status, {
        "message": f"Injected fault (HTTP {status})", "code": "injected_fault",
        "type": "invalid_request_error" if status < 500 else "server_error",
    })
    headers = spec.get("headers", {})
    if not isinstance(headers, dict) or not all(_header_text(k) and _header_text(v) for k, v in headers.items()):
        check.fail(child(path, "headers"), "must be an object of header names to Latin-1 string values without CR/LF/NUL")
        headers = {}
    retry_after = check.integer(spec, "retry_after", path, minimum=0, maximum=MAX_MILLISECONDS // 1000)
    if "retry_after" in spec and status not in RETRY_STATUSES:
        check.fail(child(path, "retry_after"), "applies to status 429 or 503 only")
    if status in RETRY_STATUSES and not any(name.lower() == "retry-after" for name in headers):
        # Named `headers` win; otherwise the client is told when to come back (1 s unless set).
        headers = {**headers, "Retry-After": str(1 if retry_after is None else retry_after)}
    return {
        "status": status,
        "message": check.text(spec, "message", path, nullable=False) if "message" in spec else defaults["message"],
        "code": check.text(spec, "code", path) if "code" in spec else defaults["code"],
        "type": check.text(spec, "type", path, nullable=False) if "type" in spec else defaults["type"],
        "param": check.text(spec, "param", path),
        "headers": dict(headers),
    }


def _required(check: Checker, spec: Mapping[str, Any], path: str, key: str, minimum: int) -> int | None:
    """A required millisecond or count value: checked first, then reported missing."""
    value = check.integer(spec, key, path, minimum=minimum, maximum=MAX_MILLISECONDS)
    if value is None and key not in spec:
        check.fail(child(path, key), "is required")
    return value


class FaultKind:
    """One kind of fault: the base takes no keys of its own and does nothing around a handler."""

    name: ClassVar[str]
    # The kind's own keys of a fault document (besides the common ones).
    keys: ClassVar[tuple[str, ...]] = ()
    # None: it acts around any route's handler; else at this hook point inside the use cases that
    # ask (chat/hooks.py), on the routes it `reaches`.
    point: ClassVar[Point | None] = None
    # Of the kinds acting at one point, those that only wait act first (a pause, then an interruption).
    waits: ClassVar[bool] = False

    @property
    def around(self) -> bool:
        """Whether it acts around the handler (not at a hook point)."""
        return self.point is None

    def reaches(self, op: Operation) -> bool:
        """Whether the use case behind `op` asks at this kind's point (only for a kind not acting `around`)."""
        return False

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        """The kind's params from a checked document (problems go to `check`)."""
        return {}

    async def act(self, fault: Fault, request: RequestContext, gate: StorageGate, errors: ErrorMap) -> Response | None:
        """Around the handler: a response replaces the handler's (before) or its answer (after)."""
        return None

    def applies(self, fault: Fault, where: Mapping[str, int]) -> bool:
        """At its point: whether `fault` is for the place asked about (`where`, e.g. fork's `step`)."""
        return True

    def action(self, fault: Fault, request: RequestContext) -> Action:
        """At its point: what `fault` makes happen on `request`."""
        return CARRY_ON


class Status(FaultKind):
    """Answer an error envelope instead of the handler's (503 by default)."""

    name = "status"
    keys = ("when", *STATUS_KEYS)

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        return _status_params(check, spec, path, 503)

    async def act(self, fault: Fault, request: RequestContext, gate: StorageGate, errors: ErrorMap) -> Response | None:
        return errors.render(fault.error())


class Latency(FaultKind):
    """Wait `latency_ms` before or after the handler."""

    name = "latency"
    keys = ("when", "latency_ms")

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {"latency_ms": _required(check, spec, path, "latency_ms", 1)}

    async def act(self, fault: Fault, request: RequestContext, gate: StorageGate, errors: ErrorMap) -> Response | None:
        await asyncio.sleep(fault.params["latency_ms"] / 1000)
        return None


class ConnectionResetKind(FaultKind):
    """Drop the connection with no response at all."""

    name = "connection_reset"
    keys = ("when",)

    async def act(self, fault: Fault, request: RequestContext, gate: StorageGate, errors: ErrorMap) -> Response | None:
        return ConnectionReset()


class StorageUnavailable(FaultKind):
    """The route's database refuses every operation for `duration_ms`, as if it could not be opened."""

    name = "storage_unavailable"
    keys = ("duration_ms",)

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {"duration_ms": _required(check, spec, path, "duration_ms", 1)}

    async def act(self, fault: Fault, request: RequestContext, gate: StorageGate, errors: ErrorMap) -> Response | None:
        gate.fail_for(fault.params["duration_ms"] / 1000)
        return None


class StorageFailure(FaultKind):
    """Writes fail as a full disk, a read-only file or an I/O error does: those of the matching
    request (and of the chat turn it starts), or with `duration_ms` every write for that long."""

    keys = ("duration_ms",)

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]  # one class, three storage conditions

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {"duration_ms": check.integer(spec, "duration_ms", path, minimum=1, maximum=MAX_MILLISECONDS)}

    async def act(self, fault: Fault, request: RequestContext, gate: StorageGate, errors: ErrorMap) -> Response | None:
        duration_ms = fault.params["duration_ms"]
        if duration_ms is None:
            request.write_refusal = REASONS[self.name]
        else:
            gate.refuse_all_for(self.name, duration_ms / 1000)
        return None


class ForkFault(FaultKind):
    """A kind acting between the stored steps of a fork, after the one its `after_step` names."""

    point = Point.FORK_STEP

    def reaches(self, op: Operation) -> bool:
        return Effect.FORK in op.effect

    def applies(self, fault: Fault, where: Mapping[str, int]) -> bool:
        return bool(fault.params["after_step"] == where["step"])


class ForkInterrupted(ForkFault):
    """Stop a fork after its write number `after_step`: a dropped connection, or the given status."""

    name = "fork_interrupted"
    keys = ("after_step", *STATUS_KEYS)

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        if "after_step" not in spec:
            check.fail(child(path, "after_step"), f"is required: 1 to {FORK_STEPS}")
        params = {"after_step": check.integer(spec, "after_step", path, minimum=1, maximum=FORK_STEPS)}
        return {**params, **_status_params(check, spec, path, None)}

    def action(self, fault: Fault, request: RequestContext) -> Action:
        """A dropped connection by default (the client cannot know what was written), or the
        error envelope the fault names."""
        if "status" in fault.params:
            return Fail(fault.error())
        return Fail(InjectedDisconnect(f"fork interrupted after step {fault.params['after_step']} (fault {fault.id})"))


class ForkPaused(ForkFault):
    """Wait `latency_ms` after a fork's write number `after_step` (a delete can land there)."""

    name = "fork_paused"
    keys = ("after_step", "latency_ms")
    waits = True

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        params: dict[str, Any] = {}
        for key, top in (("after_step", FORK_STEPS - 1), ("latency_ms", MAX_MILLISECONDS)):
            if key not in spec:
                check.fail(child(path, key), "is required")
            params[key] = check.integer(spec, key, path, minimum=1, maximum=top)
        return params

    def action(self, fault: Fault, request: RequestContext) -> Action:
        return Wait(fault.params["latency_ms"] / 1000)


class TurnFault(FaultKind):
    """A kind acting inside the chat turn on the session its path names."""

    def reaches(self, op: Operation) -> bool:
        return Effect.TURN in op.effect


class HistoryLoadFailure(TurnFault):
    """The chat turn cannot load its history (it runs without, as upstream's does)."""

    name = "history_load_failure"
    point = Point.HISTORY_LOAD

    def action(self, fault: Fault, request: RequestContext) -> Action:
        return Fail(DatabaseUnavailable("history load failed (injected fault)"))


class PersistenceFailure(TurnFault):
    """The chat turn answers but does not store its messages."""

    name = "persistence_failure"
    point = Point.PERSIST

    def action(self, fault: Fault, request: RequestContext) -> Action:
        return Fail(DatabaseUnavailable("turn not stored (injected fault)"))


class StreamCut(FaultKind):
    """A stream ends after `after_events` events, with no `done` and no clean end of the body.
    The turn itself goes on and is stored, as upstream's agent keeps running when its client
    goes away."""

    name = "stream_cut"
    keys = ("after_events",)
    point = Point.STREAM

    def reaches(self, op: Operation) -> bool:
        return op.streams

    def parse(self, check: Checker, spec: Mapping[str, Any], path: str) -> dict[str, Any]:
        return {"after_events": _required(check, spec, path, "after_events", 0)}

    def action(self, fault: Fault, request: RequestContext) -> Action:
        return Cut(fault.params["after_events"], request.scope)


# Every kind by name, in the order error messages list them.
KINDS: dict[str, FaultKind] = {kind.name: kind for kind in (
    Status(), Latency(), ConnectionResetKind(), StorageUnavailable(),
    StorageFailure("disk_full"), StorageFailure("read_only"), StorageFailure("io_error"),
    ForkInterrupted(), ForkPaused(), HistoryLoadFailure(), PersistenceFailure(), StreamCut(),
)}
