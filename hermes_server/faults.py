"""Fault injection: make the server fail on demand the way a real Hermes can fail.

Connectors must survive lost results, 503s, a fork that stops half-way, a chat
that answers without persisting, a stream that ends without `done`. Real
Hermes does these only by accident; `PUT /_fixture/faults` makes hermes-server
do them on purpose (only with `serve --fixture-api`).

A fault matches by route (a route name such as `session_fork`, one of the nine
operation names of the seeds such as `session_create`, or `*` for every
session route), optionally by method and by the path's session id, and fires
once, N times, always, or with a probability drawn from its own seeded
generator (so a run is repeatable). Where it acts:

- in the request pipeline (`before`/`after` the handler, app.py): `status`,
  `latency`, `connection_reset`, and `storage_unavailable`, which makes
  state.db refuse every operation for a while (store/db.py);
- in the writer (store/storage_faults.py): `disk_full`, `read_only`, `io_error`
  make the writes of the matching request (or, with `duration_ms`, every write
  for that long) fail exactly as that storage failure does: 503, nothing written;
- at hooks inside handlers: `fork_interrupted` and `fork_paused`
  (routes/sessions.py, after step k of fork's four writes: stop there, or wait
  there, so that a delete can land inside the fork), `history_load_failure` and
  `persistence_failure` (the chat turn), `stream_cut` (the SSE stream).

A fault changes only what it is asked to change: each state.db write it lets
through is a normal committed transaction, so the database is never corrupted.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import socket
import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hermes_server.fixtures.validate import Checker, DocumentError, Problem, child, describe
from hermes_server.http.errors import ApiError, error_response
from hermes_server.http.routing import Endpoint
from hermes_server.store.storage_faults import refuse_request_writes

if TYPE_CHECKING:
    from hermes_server.services import Services
    from hermes_server.store.db import Database

# The seeds' nine operation names, each one method of one route.
OPERATIONS: dict[str, tuple[str, str]] = {
    "sessions_list": ("sessions", "GET"),
    "session_create": ("sessions", "POST"),
    "session_get": ("session", "GET"),
    "session_patch": ("session", "PATCH"),
    "session_delete": ("session", "DELETE"),
    "session_messages": ("session_messages", "GET"),
    "session_fork": ("session_fork", "POST"),
    "session_chat": ("session_chat", "POST"),
    "session_chat_stream": ("session_chat_stream", "POST"),
}
# What `*` means: the routes of the nine operations (health and discovery only when named).
SESSION_ROUTES = frozenset(route for route, _ in OPERATIONS.values())
CHAT_ROUTES = ("session_chat", "session_chat_stream")

# Storage failures of an open state.db, as their writes see them.
STORAGE_KINDS = ("disk_full", "read_only", "io_error")
PIPELINE_KINDS = ("status", "latency", "connection_reset", "storage_unavailable", *STORAGE_KINDS)
# Handler-hook kinds and the routes they can act on.
HOOK_ROUTES: dict[str, tuple[str, ...]] = {
    "fork_interrupted": ("session_fork",),
    "fork_paused": ("session_fork",),
    "history_load_failure": CHAT_ROUTES,
    "persistence_failure": CHAT_ROUTES,
    "stream_cut": ("session_chat_stream",),
}
KINDS = PIPELINE_KINDS + tuple(HOOK_ROUTES)
FORK_STEPS = 4

COMMON_KEYS = ("id", "description", "kind", "route", "method", "session_id", "times", "probability", "seed")
STATUS_KEYS = ("status", "message", "code", "type", "param", "headers")
KIND_KEYS: dict[str, tuple[str, ...]] = {
    "status": ("when",) + STATUS_KEYS,
    "latency": ("when", "latency_ms"),
    "connection_reset": ("when",),
    "storage_unavailable": ("duration_ms",),
    **{kind: ("duration_ms",) for kind in STORAGE_KINDS},
    "fork_interrupted": ("after_step",) + STATUS_KEYS,
    "fork_paused": ("after_step", "latency_ms"),
    "history_load_failure": (),
    "persistence_failure": (),
    "stream_cut": ("after_events",),
}
MAX_MILLISECONDS = 600_000

# What a `status` fault answers when only the status is given: upstream's own wording where
# upstream has one (503 storage, 429 concurrency cap, D5's 500), a neutral one otherwise.
_STATUS_DEFAULTS: dict[int, dict[str, Any]] = {
    503: {"message": "Session database unavailable", "code": "session_db_unavailable", "type": "invalid_request_error"},
    500: {"message": "Internal server error", "code": None, "type": "server_error"},
    429: {"message": "Too many concurrent runs (max 1)", "code": "rate_limit_exceeded", "type": "rate_limit_error",
          "headers": {"Retry-After": "1"}},
}

# The request being handled, for hooks deep inside handlers and for the journal.
_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("hermes_fault_request", default=None)

# Where the pipeline leaves uvicorn's own `send`, which a connection reset needs.
RAW_SEND = "hermes.raw_send"
RESET_MARK = "hermes.connection_reset"


@dataclass
class RequestContext:
    """Route, method and path session id of one request, and the faults that fired on it."""

    route: str
    method: str
    session_id: str | None
    scope: Scope | None = None
    fired: list[str] = field(default_factory=list)
    # Each hook decides once per request: asking again (a turn's two writes) gets the same answer.
    decisions: dict[tuple[Any, ...], Fault | None] = field(default_factory=dict)


class InjectedDisconnect(Exception):
    """Raised by a hook to drop the connection with no response at all (see ConnectionReset)."""


@dataclass
class Fault:
    """One installed fault and how often it has fired."""

    id: str
    kind: str
    routes: frozenset[str]
    method: str | None
    session_id: str | None
    times: int | None
    probability: float
    seed: int
    params: dict[str, Any]
    spec: dict[str, Any]
    fired: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @property
    def when(self) -> str:
        return self.params.get("when", "before")

    def matches(self, ctx: RequestContext) -> bool:
        return (
            ctx.route in self.routes
            and (self.method is None or self.method == ctx.method)
            and (self.session_id is None or self.session_id == ctx.session_id)
        )

    def fire(self, ctx: RequestContext) -> bool:
        """Decide (and count) whether this fault acts on this matching request."""
        if self.times is not None and self.fired >= self.times:
            return False
        if self.probability < 1.0 and self._rng.random() >= self.probability:
            return False
        self.fired += 1
        ctx.fired.append(self.id)
        return True

    def error(self) -> ApiError:
        """The envelope a status-answering fault gives."""
        p = self.params
        return ApiError(p["status"], p["message"], p["code"], p["param"], type_=p["type"], headers=p["headers"] or None)

    def as_json(self) -> dict[str, Any]:
        remaining = None if self.times is None else max(self.times - self.fired, 0)
        return {**self.spec, "fired": self.fired, "remaining": remaining}


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
    headers = spec.get("headers", defaults.get("headers", {}))
    if not isinstance(headers, dict) or not all(_header_text(k) and _header_text(v) for k, v in headers.items()):
        check.fail(child(path, "headers"), "must be an object of header names to Latin-1 string values without CR/LF/NUL")
        headers = {}
    return {
        "status": status,
        "message": check.text(spec, "message", path, nullable=False) if "message" in spec else defaults["message"],
        "code": check.text(spec, "code", path) if "code" in spec else defaults["code"],
        "type": check.text(spec, "type", path, nullable=False) if "type" in spec else defaults["type"],
        "param": check.text(spec, "param", path),
        "headers": dict(headers),
    }


class FaultRegistry:
    """The installed faults of one server, in installation order."""

    def __init__(self, route_names: Iterable[str]) -> None:
        self.route_names = frozenset(route_names)
        self.faults: list[Fault] = []

    # -- installing --------------------------------------------------------

    def _routes(self, check: Checker, spec: Mapping[str, Any], path: str, kind: str) -> tuple[frozenset[str], str | None]:
        route = spec.get("route", "*")
        method = spec.get("method")
        where = child(path, "route")
        if method is not None and (not isinstance(method, str) or not method.isalpha()):
            check.fail(child(path, "method"), f"must be an HTTP method such as POST, got {method!r}")
            method = None
        method = method.upper() if method else None
        if route == "*":
            routes = SESSION_ROUTES & self.route_names if kind in PIPELINE_KINDS else frozenset(HOOK_ROUTES[kind])
        elif isinstance(route, str) and route in OPERATIONS:
            name, op_method = OPERATIONS[route]
            if method not in (None, op_method):
                check.fail(child(path, "method"), f"operation {route!r} is always {op_method}")
            routes, method = frozenset({name}), op_method
        elif isinstance(route, str) and route in self.route_names:
            routes = frozenset({route})
        else:
            known = sorted(set(OPERATIONS) | self.route_names)
            check.fail(where, f"unknown route {route!r}; use * or one of {', '.join(known)}")
            return frozenset(), method
        if kind in HOOK_ROUTES and not routes <= set(HOOK_ROUTES[kind]):
            check.fail(where, f"a {kind} fault acts only on {', '.join(HOOK_ROUTES[kind])}")
        return routes, method

    def _times(self, check: Checker, spec: Mapping[str, Any], path: str) -> int | None:
        times = spec.get("times", 1)
        if times in ("always", None):
            return None
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            check.fail(child(path, "times"), f"must be a positive integer or \"always\", got {times!r}")
            return 1
        return times

    def _parse(self, check: Checker, raw: Any, path: str, taken: set[str]) -> Fault | None:
        if not isinstance(raw, dict):
            check.fail(path, f"must be an object, got {describe(raw)}")
            return None
        kind = raw.get("kind")
        if kind not in KINDS:
            check.fail(child(path, "kind"), f"must be one of {', '.join(KINDS)}; got {kind!r}")
            return None
        spec = check.obj(raw, path, COMMON_KEYS + KIND_KEYS[kind])
        if spec is None:
            return None
        fault_id = check.text(spec, "id", path, non_empty=True)
        if fault_id is None:  # the lowest free f<n>
            fault_id = next(f"f{n}" for n in range(1, len(taken) + 2) if f"f{n}" not in taken)
        if fault_id in taken:
            check.fail(child(path, "id"), f"duplicate fault id {fault_id!r}")
        taken.add(fault_id)
        routes, method = self._routes(check, spec, path, kind)
        session_id = check.text(spec, "session_id", path)
        times = self._times(check, spec, path)
        probability = check.number(spec, "probability", path, minimum=0.0, maximum=1.0)
        seed = check.integer(spec, "seed", path) or 0
        params: dict[str, Any] = {}
        if "when" in KIND_KEYS[kind]:
            params["when"] = check.choice(spec, "when", path, ("before", "after"), default="before")
        if kind == "status":
            params.update(_status_params(check, spec, path, 503))
        elif kind == "fork_interrupted":
            if "after_step" not in spec:
                check.fail(child(path, "after_step"), f"is required: 1 to {FORK_STEPS}")
            params["after_step"] = check.integer(spec, "after_step", path, minimum=1, maximum=FORK_STEPS)
            params.update(_status_params(check, spec, path, None))
        elif kind == "fork_paused":
            for key, top in (("after_step", FORK_STEPS - 1), ("latency_ms", MAX_MILLISECONDS)):
                if key not in spec:
                    check.fail(child(path, key), "is required")
                params[key] = check.integer(spec, key, path, minimum=1, maximum=top)
        elif kind in STORAGE_KINDS:  # duration_ms optional: without it, the matching request's writes
            params["duration_ms"] = check.integer(spec, "duration_ms", path, minimum=1, maximum=MAX_MILLISECONDS)
        else:
            required = {"latency": "latency_ms", "storage_unavailable": "duration_ms", "stream_cut": "after_events"}.get(kind)
            if required:
                value = check.integer(spec, required, path, minimum=0 if kind == "stream_cut" else 1, maximum=MAX_MILLISECONDS)
                if value is None and required not in spec:
                    check.fail(child(path, required), "is required")
                params[required] = value
        normal = {"id": fault_id, **dict(spec)}
        normal.setdefault("route", "*")
        normal.setdefault("times", "always" if times is None else times)
        return Fault(fault_id, kind, routes, method, session_id, times,
                     1.0 if probability is None else probability, seed, params, normal)

    def parse(self, document: Any, taken: set[str] | None = None) -> list[Fault]:
        """Check `{"faults": [...]}` or a single fault object, all-or-nothing.

        `taken` holds ids already installed, which new faults may not reuse.
        """
        if isinstance(document, dict) and set(document) == {"faults"}:
            items = document["faults"]
            if not isinstance(items, list):
                raise DocumentError([Problem("$.faults", f"must be a list, got {describe(items)}")])
            paths = [child("$.faults", i) for i in range(len(items))]
        else:
            items, paths = [document], ["$"]
        check = Checker()
        taken = set(taken or ())
        faults = [self._parse(check, raw, path, taken) for raw, path in zip(items, paths)]
        check.raise_if_any()
        return [f for f in faults if f is not None]

    def replace(self, faults: list[Fault]) -> None:
        self.faults = faults

    def clear(self) -> None:
        self.faults = []

    def as_json(self) -> list[dict[str, Any]]:
        return [f.as_json() for f in self.faults]

    # -- firing ------------------------------------------------------------

    def enter(self, route: str, method: str, session_id: str | None, scope: Scope | None = None) -> RequestContext:
        """Note the request being dispatched (hooks and the journal read it)."""
        ctx = RequestContext(route, method, session_id, scope)
        _current.set(ctx)
        return ctx

    def firing(self, ctx: RequestContext, kinds: Iterable[str], when: str) -> Iterator[Fault]:
        """The faults of `kinds` for phase `when` that match and fire, lazily, in installation order.

        Lazy so that a fault after the one that answers the request is not counted as fired.
        """
        kinds = set(kinds)
        for fault in self.faults:
            if fault.kind in kinds and fault.when == when and fault.matches(ctx) and fault.fire(ctx):
                yield fault

    async def _act(self, ctx: RequestContext, when: str, db: Database | None) -> Response | None:
        for fault in self.firing(ctx, PIPELINE_KINDS, when):
            if fault.kind == "storage_unavailable" and db is not None:
                db.fail_for(fault.params["duration_ms"] / 1000)
            elif fault.kind in STORAGE_KINDS and db is not None:
                _refuse_writes(db, fault.kind, fault.params["duration_ms"])
            elif fault.kind == "latency":
                await asyncio.sleep(fault.params["latency_ms"] / 1000)
            elif fault.kind == "status":
                return fault.error().response()
            elif fault.kind == "connection_reset":
                return ConnectionReset()
        return None

    async def before(self, ctx: RequestContext, db: Database) -> Response | None:
        """Pipeline faults before the handler: a response replaces the handler entirely."""
        return await self._act(ctx, "before", db)

    async def after(self, ctx: RequestContext, response: Response) -> Response:
        """Pipeline faults after the handler (its writes are durable): replace or delay the answer."""
        return await self._act(ctx, "after", None) or response


def _refuse_writes(db: Database, kind: str, duration_ms: int | None) -> None:
    """A storage-kind fault: every write for `duration_ms`, else the writes of this request
    (and of the chat turn it starts, which inherits the request's context)."""
    if duration_ms is None:
        refuse_request_writes(kind)
    else:
        db.write_health.refuse_all_for(kind, duration_ms / 1000)


async def call_with_faults(svc: Services, endpoint: Endpoint, request: Request, route: str) -> Response:
    """Run a handler with the pipeline faults around it (app.py calls this only when faults exist).

    Error outcomes are rendered here by `error_response` too, so an `after` fault
    also replaces a handler's error answer.
    """
    registry = svc.faults
    assert registry is not None
    ctx = registry.enter(route, request.method, request.path_params.get("session_id"), request.scope)
    refuse_request_writes(None)
    injected = await registry.before(ctx, svc.db)
    if injected is not None:
        return injected
    try:
        response = await endpoint(request, svc)
    except InjectedDisconnect:
        return ConnectionReset()
    except Exception as exc:  # noqa: BLE001 - rendered like dispatch does, or left to it as a bug
        rendered = error_response(exc)
        if rendered is None:
            raise
        response = rendered
    return await registry.after(ctx, response)


# -- hooks called from handlers ----------------------------------------------

def _hook(svc: Services, kind: str, **where: Any) -> Fault | None:
    """The fault of `kind` (with params `where`) acting on the current request, decided once."""
    registry = svc.faults
    ctx = _current.get()
    if registry is None or ctx is None:
        return None
    key = (kind, *sorted(where.items()))
    if key not in ctx.decisions:
        ctx.decisions[key] = next(
            (f for f in registry.faults
             if f.kind == kind and all(f.params.get(k) == v for k, v in where.items())
             and f.matches(ctx) and f.fire(ctx)),
            None,
        )
    return ctx.decisions[key]


async def fork_step_done(svc: Services, step: int) -> None:
    """After fork's write number `step` (1 close, 2 child, 3 messages, 4 title): maybe wait, or stop, here.

    A pause lets a test land another request (a delete of the source) inside the fork.
    The interruption is a dropped connection by default (the client cannot know
    what was written), or the error envelope the fault names.
    """
    pause = _hook(svc, "fork_paused", after_step=step)
    if pause is not None:
        await asyncio.sleep(pause.params["latency_ms"] / 1000)
    fault = _hook(svc, "fork_interrupted", after_step=step)
    if fault is None:
        return
    if "status" in fault.params:
        raise fault.error()
    raise InjectedDisconnect(f"fork interrupted after step {step} (fault {fault.id})")


def history_load_fails(svc: Services) -> bool:
    """True when this chat turn must behave as if loading its history raised."""
    return _hook(svc, "history_load_failure") is not None


def persistence_fails(svc: Services) -> bool:
    """True when this chat turn must not be stored although it answers normally."""
    return _hook(svc, "persistence_failure") is not None


def cut_stream(svc: Services, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The SSE frames of a chat stream, or, when a `stream_cut` fault fires, the first N events
    and then a dropped connection: no `done`, no clean end of the body. The turn itself goes
    on and is stored, as upstream's agent keeps running when its client goes away."""
    fault = _hook(svc, "stream_cut")
    ctx = _current.get()
    if fault is None or ctx is None or ctx.scope is None:
        return frames
    return _cut_after(frames, fault.params["after_events"], ctx.scope)


async def _cut_after(frames: AsyncIterator[bytes], events: int, scope: Scope) -> AsyncIterator[bytes]:
    sent = 0
    try:
        async for frame in frames:
            if frame.startswith(b"event:"):
                if sent >= events:
                    break
                sent += 1
            yield frame
        else:
            return  # the stream ended before the cut point: nothing to cut
        await abort_connection(scope)
    finally:
        await frames.aclose()  # type: ignore[attr-defined]


def current_request() -> RequestContext | None:
    return _current.get()


# -- dropping a connection ----------------------------------------------------

async def abort_connection(scope: Scope) -> None:
    """Drop the client's TCP connection with a reset, so it sees no response at all.

    ASGI has no message for this, so we use the transport behind uvicorn's `send`
    (the pipeline keeps it in the scope): SO_LINGER 0 turns the close into a RST.
    """
    scope[RESET_MARK] = True
    cycle = getattr(scope.get(RAW_SEND), "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        raise RuntimeError("connection_reset needs uvicorn's HTTP transport")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass  # a plain close is still a dropped connection
    transport.abort()
    # uvicorn learns of the loss on a later loop turn; until then it would still try to answer.
    for _ in range(100):
        if getattr(cycle, "disconnected", True):
            break
        await asyncio.sleep(0)


class ConnectionReset(Response):
    """A 'response' that sends nothing and resets the connection."""

    def __init__(self) -> None:
        super().__init__(status_code=599)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await abort_connection(scope)
        # Tell the pipeline the exchange is over (uvicorn drops messages for a lost connection),
        # so it does not try to end an unfinished response with a 500.
        await send({"type": "http.response.body", "body": b"", "more_body": False})
