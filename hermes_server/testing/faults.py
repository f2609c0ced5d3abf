"""Fault injection: make the server fail on demand the way a real Hermes can fail.

Connectors must survive lost results, 503s, a fork that stops half-way, a chat
that answers without persisting, a stream that ends without `done`. Real
Hermes does these only by accident; `PUT /_fixture/faults` makes hermes-server
do them on purpose (only with `serve --fixture-api`).

A fault matches by route (a route name such as `session_fork`, one of the
operation names of the Hermes documentation such as `session_create`, or `*` for every
session route), optionally by method and by the path's session id, and fires
once, N times, always, or with a probability drawn from its own seeded
generator (so a run is repeatable). Which routes these are is read off the served route
table (`ServedRoutes`): the documented names are those its operations carry, the session
routes are those under `/api/sessions`, and a kind acting inside a use case reaches the
routes whose operations say they get there (`FaultKind.reaches`). Where a fault acts:

- around the handler (`before`/`after` it; testing/fault_layer.py wraps every
  handler once when the app is composed): `status`, `latency`,
  `connection_reset`, and `storage_unavailable`, which makes state.db refuse
  every operation for a while;
- in the writer (store/storage_faults.py): `disk_full`, `read_only`, `io_error`
  make the writes of the matching request (or, with `duration_ms`, every write
  for that long) fail exactly as that storage failure does: 503, nothing written;
- at the hook points inside use cases (chat/hooks.py), each kind's own effect there:
  `fork_interrupted` and `fork_paused` (after step k of fork's four writes: stop there,
  or wait there, so that a delete can land inside the fork), `history_load_failure` and
  `persistence_failure` (the chat turn), `stream_cut` (every route that streams: the
  session chat stream, a run's events, a streamed response or chat completion).

This module holds the faults and their registry; each kind is one class
(testing/fault_kinds.py), and the layer that makes them act is testing/fault_layer.py.

A fault changes only what it is asked to change: each state.db write it lets
through is a normal committed transaction, so the database is never corrupted.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_server.domain.errors import DocumentError, Problem
from hermes_server.http.errors import InjectedStatus
from hermes_server.http.routing import Effect, Route
from hermes_server.testing.fault_kinds import KINDS, STATUS_KEYS, FaultKind
from hermes_server.testing.request_context import RequestContext
from hermes_server.testing.validate import Checker, child, describe

# Where the session routes are: what `*` means for a kind that acts around handlers (health,
# discovery and the other families only when named).
SESSION_PATH = "/api/sessions"
COMMON_KEYS = ("id", "description", "kind", "route", "method", "session_id", "times", "probability", "seed")


@dataclass
class Fault:
    """One installed fault and how often it has fired."""

    id: str
    kind: FaultKind
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


class ServedRoutes:
    """What faults (and the journal's filters) may name, read off the served route table: each route
    name, the documented operation names (`Operation.documented`, each one method of one route), the
    session routes `*` stands for, and the routes each use-case kind reaches, in table order."""

    def __init__(self, routes: Iterable[Route]) -> None:
        served = [(route, method.upper(), entry.operation) for route in routes for method, entry in route.methods.items()]
        self.names = tuple(dict.fromkeys(route.name for route, _, _ in served))
        self.operations: dict[str, tuple[str, str]] = {
            op.documented: (route.name, method) for route, method, op in served if op.documented}
        self.sessions = frozenset(route.name for route, _, _ in served
                                  if route.template == SESSION_PATH or route.template.startswith(SESSION_PATH + "/"))
        # What each (route, method) does, as the audit's rules read it.
        self.effects: dict[tuple[str, str], Effect] = {(route.name, method): op.effect for route, method, op in served}
        self.reached: dict[str, tuple[str, ...]] = {
            kind.name: tuple(dict.fromkeys(route.name for route, _, op in served if kind.reaches(op)))
            for kind in KINDS.values() if not kind.around}


class FaultRegistry:
    """The installed faults of one server, in installation order."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self.served = ServedRoutes(routes)
        self.faults: list[Fault] = []

    # -- installing --------------------------------------------------------

    def _routes(self, check: Checker, spec: Mapping[str, Any], path: str, kind: FaultKind
                ) -> tuple[frozenset[str], str | None]:
        route = spec.get("route", "*")
        method = spec.get("method")
        where = child(path, "route")
        if method is not None and (not isinstance(method, str) or not method.isalpha()):
            check.fail(child(path, "method"), f"must be an HTTP method such as POST, got {method!r}")
            method = None
        method = method.upper() if method else None
        served = self.served
        reached = None if kind.around else served.reached[kind.name]
        if route == "*":
            routes = served.sessions if reached is None else frozenset(reached)
        elif isinstance(route, str) and route in served.operations:
            name, op_method = served.operations[route]
            if method not in (None, op_method):
                check.fail(child(path, "method"), f"operation {route!r} is always {op_method}")
            routes, method = frozenset({name}), op_method
        elif isinstance(route, str) and route in served.names:
            routes = frozenset({route})
        else:
            known = sorted(set(served.operations) | set(served.names))
            check.fail(where, f"unknown route {route!r}; use * or one of {', '.join(known)}")
            return frozenset(), method
        if reached is not None and not routes <= set(reached):
            check.fail(where, f"a {kind.name} fault acts only on {', '.join(reached)}")
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
        name = raw.get("kind")
        kind = KINDS.get(name) if isinstance(name, str) else None
        if kind is None:
            check.fail(child(path, "kind"), f"must be one of {', '.join(KINDS)}; got {name!r}")
            return None
        spec = check.obj(raw, path, COMMON_KEYS + kind.keys)
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
        if "when" in kind.keys:
            params["when"] = check.choice(spec, "when", path, ("before", "after"), default="before")
        params.update(kind.parse(check, spec, path))
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
        faults = [self._parse(check, raw, path, taken) for raw, path in zip(items, paths, strict=True)]
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

    def firing(self, ctx: RequestContext, when: str) -> Iterator[Fault]:
        """The faults acting around handlers for phase `when` that match and fire, lazily, in
        installation order. Lazy so that a fault after the one that answers the request is not
        counted as fired.
        """
        for fault in self.faults:
            if fault.kind.around and fault.when == when and fault.matches(ctx) and fault.fire(ctx):
                yield fault

    def decide(self, ctx: RequestContext, kind: FaultKind, where: Mapping[str, int]) -> Fault | None:
        """The fault of `kind` acting on this request at the place `where`, decided once per request."""
        key = (kind.name, *sorted(where.items()))
        if key not in ctx.decisions:
            ctx.decisions[key] = next(
                (f for f in self.faults
                 if f.kind is kind and kind.applies(f, where) and f.matches(ctx) and f.fire(ctx)),
                None,
            )
        decided: Fault | None = ctx.decisions[key]
        return decided
