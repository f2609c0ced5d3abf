"""Fault injection: make the server fail on demand the way a real Hermes can fail.

Connectors must survive lost results, 503s, a fork that stops half-way, a chat
that answers without persisting, a stream that ends without `done`. Real
Hermes does these only by accident; `PUT /_fixture/faults` makes hermes-server
do them on purpose (only with `serve --fixture-api`).

A fault matches by route (a route name such as `session_fork`, one of the nine
operation names of the Hermes documentation such as `session_create`, or `*` for every
session route), optionally by method and by the path's session id, and fires
once, N times, always, or with a probability drawn from its own seeded
generator (so a run is repeatable). Where it acts:

- around the handler (`before`/`after` it; testing/fault_layer.py wraps every
  handler once when the app is composed): `status`, `latency`,
  `connection_reset`, and `storage_unavailable`, which makes state.db refuse
  every operation for a while;
- in the writer (store/storage_faults.py): `disk_full`, `read_only`, `io_error`
  make the writes of the matching request (or, with `duration_ms`, every write
  for that long) fail exactly as that storage failure does: 503, nothing written;
- at the test-control hooks inside use cases (chat/hooks.py): `fork_interrupted`
  and `fork_paused` (after step k of fork's four writes: stop there, or wait there,
  so that a delete can land inside the fork), `history_load_failure` and
  `persistence_failure` (the chat turn), `stream_cut` (the session chat stream, a run's
  events, a streamed response).

This module holds the faults and their registry; the layer that makes them act
is testing/fault_layer.py.

A fault changes only what it is asked to change: each state.db write it lets
through is a normal committed transaction, so the database is never corrupted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from hermes_server.domain.errors import DocumentError, Problem
from hermes_server.http.errors import InjectedStatus
from hermes_server.testing.validate import Checker, child, describe

# The nine operation names of the Hermes session API documentation, each one method of one route.
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
    "stream_cut": ("session_chat_stream", "run_events", "responses"),
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

@dataclass
class RequestContext:
    """Route, method and path session id of one request, and the faults that fired on it."""

    route: str
    method: str
    session_id: str | None
    fired: list[str] = field(default_factory=list)
    # Each hook decides once per request: asking again (a turn's two writes) gets the same answer.
    decisions: dict[tuple[Any, ...], Fault | None] = field(default_factory=dict)


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

    def error(self) -> InjectedStatus:
        """The error a status-answering fault raises or answers, rendered by the route's error map."""
        p = self.params
        return InjectedStatus(p["status"], p["message"], p["code"], p["param"], type_=p["type"],
                              headers=p["headers"] or None, given=frozenset(k for k in STATUS_KEYS if k in self.spec))

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
                raise DocumentError([Problem("$.faults", f"must be a list, got {describe(items)}")], "invalid_fault")
            paths = [child("$.faults", i) for i in range(len(items))]
        else:
            items, paths = [document], ["$"]
        check = Checker()
        taken = set(taken or ())
        faults = [self._parse(check, raw, path, taken) for raw, path in zip(items, paths)]
        check.raise_if_any("invalid_fault")
        return [f for f in faults if f is not None]

    def replace(self, faults: list[Fault]) -> None:
        self.faults = faults

    def clear(self) -> None:
        self.faults = []

    async def reset(self) -> None:
        """`clear`, as a registered part of the server's state."""
        self.clear()

    def as_json(self) -> list[dict[str, Any]]:
        return [f.as_json() for f in self.faults]

    # -- firing ------------------------------------------------------------

    def firing(self, ctx: RequestContext, kinds: Iterable[str], when: str) -> Iterator[Fault]:
        """The faults of `kinds` for phase `when` that match and fire, lazily, in installation order.

        Lazy so that a fault after the one that answers the request is not counted as fired.
        """
        kinds = set(kinds)
        for fault in self.faults:
            if fault.kind in kinds and fault.when == when and fault.matches(ctx) and fault.fire(ctx):
                yield fault

    def decide(self, ctx: RequestContext, kind: str, **where: Any) -> Fault | None:
        """The fault of `kind` (with params `where`) acting on this request, decided once per request."""
        key = (kind, *sorted(where.items()))
        if key not in ctx.decisions:
            ctx.decisions[key] = next(
                (f for f in self.faults
                 if f.kind == kind and all(f.params.get(k) == v for k, v in where.items())
                 and f.matches(ctx) and f.fire(ctx)),
                None,
            )
        return ctx.decisions[key]
