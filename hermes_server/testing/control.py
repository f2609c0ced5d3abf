"""The test-control state of one server (`serve --fixture-api`) and how it is composed in.

`app.py` builds one `Control` and asks it, once, to wrap every route's handlers
with the fault layer and add the /_fixture/ routes (`wrap_routes`), for the hooks
the context is built with (`hooks`), and to stack the journal and transport layers
around the pipeline (`wrap_app`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp

from hermes_server.chat.hooks import Hooks
from hermes_server.families import Family, FixtureParts
from hermes_server.http.errors import ErrorMap
from hermes_server.http.routing import Route
from hermes_server.store.db import Database
from hermes_server.testing.fault_layer import FaultHooks, FaultLayer, KeepTransport
from hermes_server.testing.faults import FaultRegistry
from hermes_server.testing.journal import Journal, JournalLayer
from hermes_server.testing.load import LoadResult, StartFixture, reset_state
from hermes_server.testing.routes import build_fixture_routes

if TYPE_CHECKING:
    from hermes_server.context import AppContext

# How long a reset waits for chat turns still running before it wipes the state anyway.
RESET_TURN_WAIT_SECONDS = 10.0


class Control:
    """Installed faults, the request journal and the start fixture of one server, and the
    served dialects' units (resets and seeds reach their stores, their control routes are added)."""

    def __init__(self, route_names: list[str], start_fixture: StartFixture | None,
                 families: tuple[Family, ...] = (), parts: FixtureParts | None = None) -> None:
        self.faults = FaultRegistry(route_names)
        self.journal = Journal()
        self.start_fixture = start_fixture
        self.families = families
        self.parts = parts or FixtureParts()
        self.hooks: Hooks = FaultHooks(self.faults)

    async def reset(self, ctx: AppContext, to_fixture: bool) -> LoadResult:
        """Back to the start: no faults, an empty journal, a rewound clock and id source, and an
        empty database or exactly the start fixture (each served dialect's store too, emptied
        as a fresh server finds it). The storage outage a fault began ends too.

        Chat turns still running (a client that went away does not stop them) are given
        time to finish first, so none of them writes into the fresh state; live runs are
        stopped first. Runs and stored responses are forgotten too.
        """
        ctx.runs.stop_all()
        await ctx.turns.wait(RESET_TURN_WAIT_SECONDS)
        ctx.runs.clear()
        await ctx.response_store.clear()
        self.faults.clear()
        self.journal.clear()
        ctx.db.end_outage()
        await ctx.state.reset()  # the registered parts (each served dialect's store among them)
        ctx.clock.restart()
        ctx.ids.restart()
        if to_fixture and self.start_fixture is not None:
            return await self.start_fixture.load(ctx.db, ctx.now(), replace=True)
        return await reset_state(ctx.db, self.parts)

    def wrap_routes(self, routes: list[Route], errors: ErrorMap, db: Database,
                    databases: dict[str, Database] | None = None) -> list[Route]:
        """Every route with the fault layer around its handlers, then the /_fixture/ routes.

        `databases` names the database of each route not served from state.db (a dialect's),
        which its storage faults act on."""
        layer = FaultLayer(self.faults, errors, db)
        wrapped = [layer.wrap(route, (databases or {}).get(route.name)) for route in routes]
        extra = [route for family in self.families for route in family.control_routes()]
        return wrapped + build_fixture_routes(self) + extra

    def wrap_app(self, app: ASGIApp) -> ASGIApp:
        """The pipeline inside the journal, inside the layer that keeps the transport."""
        return KeepTransport(JournalLayer(app, self.journal))

