"""Making installed faults act: around every handler, at the use cases' hooks, on the connection.

Composed in once, when the app is built with `serve --fixture-api`:
`wrap_routes` wraps each route's handlers, `FaultHooks` is the context's hooks
object, and `KeepTransport` (testing/transport.py) is the outermost ASGI layer,
keeping uvicorn's own `send` in the scope because dropping a connection needs its
transport. What each kind does is its own class's `act` (testing/fault_kinds.py).
The default server has none of this and pays nothing for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from hermes_server.http.errors import ErrorMap
from hermes_server.http.routing import Endpoint, Route
from hermes_server.store.db import Database
from hermes_server.testing.faults import FaultRegistry, RequestContext
from hermes_server.testing.storage_gate import StorageGate, StorageGates, refuse_request_writes
from hermes_server.testing.transport import ConnectionReset, abort_connection

# Where the fault layer leaves a request's fault bookkeeping in its scope.
FAULTS_KEY = "hermes.faults"


class InjectedDisconnect(Exception):
    """Raised by a hook to drop the connection with no response at all (see ConnectionReset)."""


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
        faults = RequestContext(route_name, request.method, request.path_params.get("session_id"))
        request.scope[FAULTS_KEY] = faults
        # asyncio may carry one request's context into the next on the same connection.
        refuse_request_writes(None)
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
            response = await fault.kind.act(fault, gate, errors)
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
    """The context's hooks when faults may be installed (chat/hooks.py is the protocol)."""

    def __init__(self, registry: FaultRegistry) -> None:
        self.registry = registry

    def _decide(self, scope: Mapping[str, Any] | None, kind: str, **where: Any) -> Any:
        faults = request_faults(scope)
        return None if faults is None else self.registry.decide(faults, kind, **where)

    async def fork_step_done(self, scope: Mapping[str, Any], step: int) -> None:
        """After fork's write number `step`: maybe wait, or stop, here.

        A pause lets a test land another request (a delete of the source) inside the fork.
        The interruption is a dropped connection by default (the client cannot know
        what was written), or the error envelope the fault names.
        """
        pause = self._decide(scope, "fork_paused", after_step=step)
        if pause is not None:
            await asyncio.sleep(pause.params["latency_ms"] / 1000)
        fault = self._decide(scope, "fork_interrupted", after_step=step)
        if fault is None:
            return
        if "status" in fault.params:
            raise fault.error()
        raise InjectedDisconnect(f"fork interrupted after step {step} (fault {fault.id})")

    def history_load_fails(self, scope: Mapping[str, Any] | None) -> bool:
        return self._decide(scope, "history_load_failure") is not None

    def persistence_fails(self, scope: Mapping[str, Any] | None) -> bool:
        return self._decide(scope, "persistence_failure") is not None

    def stream(self, scope: Mapping[str, Any], frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The stream's frames, or, when a `stream_cut` fault fires, the first N events and then
        a dropped connection: no `done`, no clean end of the body. The turn itself goes on and
        is stored, as upstream's agent keeps running when its client goes away."""
        fault = self._decide(scope, "stream_cut")
        if fault is None:
            return frames
        return _cut_after(frames, fault.params["after_events"], scope)


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
