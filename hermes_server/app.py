"""create_app(settings): the composition root.

Builds the context every handler shares, the route table from each route family's
module, the request pipeline, and, only when asked for, the test-control layers,
each stacked once here (the way Datasette's `app()` wraps `asgi = Layer(asgi)`), so
the default server has no per-request branch for them. The test-control package is
imported only when a test feature is switched on, and a dialect's modules only when its
switch is: without it its paths are simply not routed. Each served dialect is one unit
(`families.Family`) whose parts are composed here by one loop each, never by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from hermes_server.agents import build_agent
from hermes_server.chat.hooks import NO_HOOKS
from hermes_server.config import Settings
from hermes_server.context import AppContext
from hermes_server.dialects import KNOWN
from hermes_server.domain.clock import Clock
from hermes_server.domain.ids import IdSource
from hermes_server.domain.quirks import Quirks
from hermes_server.families import Family, FixtureParts, with_defaults
from hermes_server.http.deviations import deviation_rows
from hermes_server.http.errors import HERMES_ERRORS, ErrorMap
from hermes_server.http.job_errors import job_error_rows
from hermes_server.http.pipeline import Pipeline
from hermes_server.http.routing import Route, Router
from hermes_server.routes import (
    catalog,
    chat,
    completions,
    discovery,
    jobs,
    responses,
    runs,
    sessions,
)
from hermes_server.state import StateRegistry
from hermes_server.store.db import Database

if TYPE_CHECKING:
    from hermes_server.testing.load import StartFixture


def build_routes() -> list[Route]:
    """Every Hermes path this server serves, in upstream's order (discovery, sessions, chat)."""
    return [*discovery.routes(), *sessions.routes(), *chat.routes(), *completions.routes(), *responses.routes(),
            *runs.routes(), *catalog.routes(), *jobs.routes()]


def build_errors(quirks: Quirks, families: tuple[Family, ...] = ()) -> ErrorMap:
    """The app's error table: the Hermes rows, the jobs rows, for each documented deviation
    hermes-server's answer or 0.19.0's, as `quirks` chooses (once, here), and the rows the
    served dialects add."""
    rows = {**HERMES_ERRORS.handlers, **job_error_rows(quirks), **deviation_rows(quirks, HERMES_ERRORS)}
    for family in families:
        rows.update(family.errors)
    return ErrorMap(rows)


@dataclass
class Dialects:
    """The served dialects' units, and what they add together: routes, the database of each
    route (its storage faults act on it), OpenAPI components, CORS request headers."""

    families: tuple[Family, ...] = ()
    routes: list[Route] = field(default_factory=list)
    databases: dict[str, Database] = field(default_factory=dict)
    components: dict[str, Any] = field(default_factory=dict)
    cors_headers: tuple[str, ...] = ()

    @classmethod
    def build(cls, settings: Settings) -> Dialects:
        """Build each known dialect whose switch is on, its files opened like state.db."""
        make_db = partial(Database, reader_threads=settings.reader_threads,
                          write_retry_seconds=settings.write_retry_seconds)
        families = tuple(d.build(settings, make_db) for d in KNOWN if d.served(settings))
        built = cls(families)
        for family in families:
            built.routes += family.routes
            built.databases.update(family.databases)
            built.components.update(family.components)
            built.cors_headers += family.cors_headers
        return built

    def fixture_parts(self, settings: Settings) -> FixtureParts:
        return FixtureParts.of(KNOWN, settings, self.families)

    def register(self, state: StateRegistry) -> None:
        for family in self.families:
            for name, part in family.resettables.items():
                state.register(name, part)

    async def close(self) -> None:
        for family in self.families:
            await family.close()


class HermesApp:
    """The ASGI callable: lifespan here, HTTP through the composed layers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings = with_defaults(settings, KNOWN)
        db = Database(settings.db_path, reader_threads=settings.reader_threads,
                      write_retry_seconds=settings.write_retry_seconds)
        self.dialects = dialects = Dialects.build(settings)
        routes = build_routes() + dialects.routes
        quirks = Quirks.upstream(settings.upstream_quirks)
        errors = build_errors(quirks, dialects.families)
        parts = dialects.fixture_parts(settings)
        start_fixture = self._start_fixture(settings, parts)
        control = None
        if settings.fixture_api:
            from hermes_server.testing.control import Control

            control = Control([route.name for route in routes], start_fixture, dialects.families, parts)
            routes = control.wrap_routes(routes, errors, db, dialects.databases)
        self.context = AppContext(
            settings, db, build_agent(settings), Clock(settings.deterministic), IdSource(settings.deterministic),
            routes, hooks=control.hooks if control else NO_HOOKS, api_components=dialects.components,
            quirks=quirks,
        )
        dialects.register(self.context.state)
        self.start_fixture = start_fixture
        pipeline = Pipeline(settings, Router(routes), self.context, errors)
        self.http: ASGIApp = control.wrap_app(pipeline) if control else pipeline

    @staticmethod
    def _start_fixture(settings: Settings, parts: FixtureParts) -> StartFixture | None:
        if settings.fixture_path is None:
            return None
        from hermes_server.testing.load import StartFixture

        return StartFixture(settings.fixture_path, parts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self.http(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        ctx = self.context
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if not ctx.settings.db_path.exists():
                    ctx.db.home_problems.check()  # a home that cannot hold state.db is named in the log now
                failure = None
                if self.start_fixture is not None:
                    failure = await self.start_fixture.startup(ctx.db, ctx.now())
                if failure is not None:
                    await send({"type": "lifespan.startup.failed", "message": failure})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # Chat turns still running finish (and write) before the database closes.
                await ctx.turns.drain(ctx.settings.turn_drain_seconds)
                await ctx.agent.aclose()
                await ctx.db.close()
                await ctx.response_store.close()
                await self.dialects.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_app(settings: Settings) -> HermesApp:
    """Build the ASGI app for `settings`."""
    return HermesApp(settings)
