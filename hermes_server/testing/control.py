"""The test-control state of one server (`serve --fixture-api`) and how it is composed in.

`app.py` builds one `Control` and asks it, once, to wrap every route's handlers
with the fault layer and add the /_fixture/ routes (`wrap_routes`), to register
its own stateful parts (`register`), for the hooks the context is built with
(`hooks`), and to stack the journal and transport layers around the pipeline
(`wrap_app`). The storage faults' gates are made before any database is built
(`app.py`'s factory hands each database its gate) and given to `Control` here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp

from hermes_server.chat.hooks import Hooks
from hermes_server.families import Family, FixtureParts
from hermes_server.http.errors import ErrorMap
from hermes_server.http.routing import Route
from hermes_server.openapi.control_schemas import COMPONENTS as CONTROL_COMPONENTS
from hermes_server.state import StateRegistry
from hermes_server.store.db import Database
from hermes_server.testing.fault_layer import FaultHooks, FaultLayer
from hermes_server.testing.faults import FaultRegistry
from hermes_server.testing.inspector import build_inspector_routes
from hermes_server.testing.journal import Journal, JournalLayer
from hermes_server.testing.load import LoadResult, StartFixture, reset_state
from hermes_server.testing.routes import build_fixture_routes
from hermes_server.testing.storage_gate import StorageGates
from hermes_server.testing.transport import KeepTransport

if TYPE_CHECKING:
    from hermes_server.context import AppContext

# How long a reset waits for chat turns still running before it wipes the state anyway.
RESET_TURN_WAIT_SECONDS = 10.0


class Control:
    """Installed faults, storage gates, the request journal and the start fixture of one server,
    and the served dialects' units (seeds reach their stores, their control routes are added)."""

    def __init__(self, routes: list[Route], start_fixture: StartFixture | None,
                 families: tuple[Family, ...] = (), parts: FixtureParts | None = None, *,
                 gates: StorageGates | None = None) -> None:
        self.faults = FaultRegistry(routes)
        # What the served routes are, as faults, the journal and the audit name them.
        self.served = self.faults.served
        # The gates app.py's database factory gave each database (none yet: a control alone).
        self.gates = gates if gates is not None else StorageGates()
        self.journal = Journal(operations=self.served.operations)
        # The OpenAPI components the control routes name.
        self.components = CONTROL_COMPONENTS
        self.start_fixture = start_fixture
        self.families = families
        self.parts = parts or FixtureParts()
        self.hooks: Hooks = FaultHooks(self.faults)

    def register(self, state: StateRegistry) -> None:
        """Test control's own parts of the server's state: each database's storage gate (first, so
        that an injected outage ends before the databases are emptied), the faults, the journal.
        Called once every database is built (each has its gate by then)."""
        for label, gate in self.gates.by_label().items():
            state.register(f"storage_faults:{label}", gate)
        state.register("faults", self.faults)
        state.register("journal", self.journal)

    async def reset(self, ctx: AppContext, to_fixture: bool) -> LoadResult:
        """Back to the start: every registered part of the server's state reset (state.py), then
        the start fixture loaded when asked; the answer counts what the databases then hold.

        Chat turns still running (a client that went away does not stop them) are given
        time to finish first, so none of them writes into the fresh state; live runs are
        stopped first.
        """
        ctx.runs.stop_all()
        await ctx.turns.wait(RESET_TURN_WAIT_SECONDS)
        await ctx.state.reset()
        if to_fixture and self.start_fixture is not None:
            return await self.start_fixture.load(ctx.db, ctx.now(), replace=True)
        return await reset_state(ctx.db, self.parts)

    def wrap_routes(self, routes: list[Route], errors: ErrorMap, db: Database,
                    databases: dict[str, Database] | None = None) -> list[Route]:
        """Every route with the fault layer around its handlers, then the /_fixture/ routes.

        `databases` names the database of each route not served from state.db (a dialect's),
        which its storage faults act on."""
        layer = FaultLayer(self.faults, errors, db, self.gates)
        wrapped = [layer.wrap(route, (databases or {}).get(route.name)) for route in routes]
        extra = [route for family in self.families for route in family.control_routes()]
        return wrapped + build_fixture_routes(self) + build_inspector_routes() + extra

    def wrap_app(self, app: ASGIApp) -> ASGIApp:
        """The pipeline inside the journal, inside the layer that keeps the transport."""
        return KeepTransport(JournalLayer(app, self.journal))

