"""Making installed faults act: around every handler, at the use cases' hooks, on the connection.

Composed in once, when the app is built with `serve --fixture-api`:
`wrap_routes` wraps each route's handlers, `FaultHooks` is the context's hooks
object, and `KeepTransport` (testing/transport.py) is the outermost ASGI layer,
keeping uvicorn's own `send` in the scope because dropping a connection needs its
transport. The layer makes each request the current one (testing/request_context.py)
for its handler and what that starts; what each kind does is its own class's `act`
around the handler, or `action` at a hook point (testing/fault_kinds.py). The default
server has none of this and pays nothing for it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from hermes_server.chat.hooks import CARRY_ON, Action, Point
from hermes_server.http.errors import ErrorMap
from hermes_server.http.routing import Endpoint, Route
from hermes_server.store.db import Database
from hermes_server.testing.fault_kinds import KINDS, FaultKind
from hermes_server.testing.faults import FaultRegistry
from hermes_server.testing.request_context import RequestContext, current, serving
from hermes_server.testing.storage_gate import StorageGate, StorageGates
from hermes_server.testing.transport import ConnectionReset, InjectedDisconnect

# Where the fault layer leaves a request's fault bookkeeping in its scope (for the journal).
FAULTS_KEY = "hermes.faults"


def request_faults(scope: Mapping[str, Any] | None) -> RequestContext | None:
    """The fault bookkeeping of the request `scope` belongs to (None outside a wrapped handler)."""
    return None if scope is None else scope.get(FAULTS_KEY)


class FaultLayer:
    """Runs a handler with the pipeline faults around it.

    Error outcomes are rendered here with the route's error map too, so an `after`
    fault also replaces a handler's error answer.
    """

    def __init__(self, registry: FaultRegistry, errors: ErrorMap, db: Database, gates: StorageGates) -> None:
        self.registry = registry
        self.errors = errors
        self.db = db
        self.gates = gates

    def wrap(self, route: Route, db: Database | None = None) -> Route:
        """The route with each handler wrapped (done once, when the app is built); `db` is the
        database its storage faults act on (None: state.db)."""
        errors = route.errors or self.errors
        gate = self.gates.of((db or self.db).label)
        return route.with_methods({method: self._wrapped(endpoint, route.name, errors, gate)
                                   for method, endpoint in route.endpoints.items()})

    def _wrapped(self, endpoint: Endpoint, route_name: str, errors: ErrorMap, gate: StorageGate) -> Endpoint:
        async def call(request: Request, ctx: Any) -> Response:
            return await self.call(endpoint, request, ctx, route_name, errors, gate)
        return call

    async def call(self, endpoint: Endpoint, request: Request, ctx: Any, route_name: str,
                   errors: ErrorMap, gate: StorageGate) -> Response:
        faults = RequestContext(route_name, request.method, request.path_params.get("session_id"), request.scope)
        request.scope[FAULTS_KEY] = faults
        with serving(faults):
            injected = await self._act(faults, "before", errors, gate)
            if injected is not None:
                await _drain(request)
                return injected
            try:
                response = await endpoint(request, ctx)
            except InjectedDisconnect:
                return ConnectionReset()
            except Exception as exc:
                rendered = errors.render(exc)
                if rendered is None:
                    raise
                response = rendered
            return await self._act(faults, "after", errors, gate) or response

    async def _act(self, faults: RequestContext, when: str, errors: ErrorMap, gate: StorageGate) -> Response | None:
        """Pipeline faults: before the handler a response replaces it; after it (its writes are
        durable) a response replaces the answer."""
        for fault in self.registry.firing(faults, when):
            response = await fault.kind.act(fault, faults, gate, errors)
            if response is not None:
                return response
        return None


async def _drain(request: Request) -> None:
    """Read the body the handler will not: the journal records it (the audit compares a retry's
    body with the refused call's), and the connection is left clean for the next request."""
    try:
        async for _ in request.stream():
            pass
    except ClientDisconnect:
        pass


class FaultHooks:
    """The context's hooks when faults may be installed (chat/hooks.py is the protocol): at each
    point, the kinds acting there, those that only wait first."""

    def __init__(self, registry: FaultRegistry) -> None:
        self.registry = registry
        self.kinds: dict[Point, tuple[FaultKind, ...]] = {
            point: tuple(sorted((kind for kind in KINDS.values() if kind.point is point), key=lambda k: not k.waits))
            for point in Point}

    def at(self, point: Point, **where: int) -> Action:
        request = current()
        if request is None:
            return CARRY_ON
        return _Faults(self.registry, self.kinds[point], request, where)


class _Faults(Action):
    """What the installed faults make happen at one point of one request: each kind acting there,
    in turn, decides (once per request) whether one of its faults fires, and acts if so."""

    def __init__(self, registry: FaultRegistry, kinds: tuple[FaultKind, ...], request: RequestContext,
                 where: Mapping[str, int]) -> None:
        self.registry, self.kinds, self.request, self.where = registry, kinds, request, where

    def _action(self, kind: FaultKind) -> Action:
        fault = self.registry.decide(self.request, kind, self.where)
        return CARRY_ON if fault is None else kind.action(fault, self.request)

    async def happen(self) -> None:
        for kind in self.kinds:
            await self._action(kind).happen()

    def frames(self, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        for kind in self.kinds:
            frames = self._action(kind).frames(frames)
        return frames
