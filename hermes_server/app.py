"""create_app(settings): the composition root.

Builds the context every handler shares, the route table from each route family's
module, the request pipeline, and, only when asked for, the test-control layers,
each stacked once here (the way Datasette's `app()` wraps `asgi = Layer(asgi)`), so
the default server has no per-request branch for them. The test-control package is
imported only when a test feature is switched on, and the herm.run dialect only when
`--herm-run` is: without it its paths are simply not routed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from hermes_server.agents import build_agent
from hermes_server.api.errors import build_errors
from hermes_server.chat.hooks import NO_HOOKS
from hermes_server.config import Settings
from hermes_server.context import AppContext
from hermes_server.domain.clock import Clock
from hermes_server.domain.ids import IdSource
from hermes_server.domain.quirks import Quirks
from hermes_server.http.auth import bearer_check
from hermes_server.http.pipeline import Check, Pipeline
from hermes_server.http.routing import BEARER, Route, Router
from hermes_server.openapi.schemas import FIRE_TOKEN
from hermes_server.routes import catalog, chat, completions, discovery, jobs, responses, runs, sessions
from hermes_server.store.db import Database

if TYPE_CHECKING:
    from hermes_server.hermrun.store import HermRunStore
    from hermes_server.testing.load import StartFixture


def build_routes() -> list[Route]:
    """Every Hermes path this server serves, in upstream's order (discovery, sessions, chat)."""
    return [*discovery.routes(), *sessions.routes(), *chat.routes(), *completions.routes(), *responses.routes(),
            *runs.routes(), *catalog.routes(), *jobs.routes()]


def security_checks(settings: Settings) -> dict[str, Check]:
    """The check of each security scheme the Hermes operations name (the pipeline runs them)."""
    return {BEARER: bearer_check(settings.api_key), FIRE_TOKEN: catalog.refuse_fire_token}


@dataclass
class Dialects:
    """What the dialects switched on add: routes, their databases, OpenAPI components, the
    checks of their security schemes, and the request headers browsers may send them."""

    routes: list[Route] = field(default_factory=list)
    # The database each dialect route is served from (its storage faults act on it).
    databases: dict[str, Database] = field(default_factory=dict)
    components: dict[str, Any] = field(default_factory=dict)
    herm_store: HermRunStore | None = None
    checks: dict[str, Callable[[Request], None]] = field(default_factory=dict)
    cors_headers: tuple[str, ...] = ()

    @classmethod
    def build(cls, settings: Settings) -> Dialects:
        if not settings.herm_run:
            return cls()
        from hermes_server.hermrun import openapi as herm_openapi
        from hermes_server.hermrun.routes import build_routes as herm_routes
        from hermes_server.hermrun.routes import security_checks as herm_checks
        from hermes_server.hermrun.store import HermRunStore

        store = HermRunStore(settings.home, write_retry_seconds=settings.write_retry_seconds)
        routes = herm_routes(store)
        # herm.run clients authenticate with `x-api-key`; browsers may send it only while it is served.
        return cls(routes, {route.name: store.db for route in routes}, herm_openapi.COMPONENTS, store,
                   herm_checks(settings), ("x-api-key",))

    async def close(self) -> None:
        if self.herm_store is not None:
            await self.herm_store.close()


class HermesApp:
    """The ASGI callable: lifespan here, HTTP through the composed layers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        db = Database(settings.db_path, reader_threads=settings.reader_threads,
                      write_retry_seconds=settings.write_retry_seconds)
        self.dialects = dialects = Dialects.build(settings)
        routes = build_routes() + dialects.routes
        quirks = Quirks.upstream(settings.upstream_quirks)
        errors = build_errors(quirks)
        start_fixture = self._start_fixture(settings, dialects.herm_store)
        control = None
        if settings.fixture_api:
            from hermes_server.testing.control import Control

            control = Control([route.name for route in routes], start_fixture, dialects.herm_store)
            routes = control.wrap_routes(routes, errors, db, dialects.databases)
        self.context = AppContext(
            settings, db, build_agent(settings), Clock(settings.deterministic), IdSource(settings.deterministic),
            routes, hooks=control.hooks if control else NO_HOOKS, api_components=dialects.components,
            quirks=quirks,
        )
        self.start_fixture = start_fixture
        pipeline = Pipeline(settings, Router(routes), self.context, errors,
                            checks={**security_checks(settings), **dialects.checks},
                            extra_cors_headers=dialects.cors_headers)
        self.http: ASGIApp = control.wrap_app(pipeline) if control else pipeline

    @staticmethod
    def _start_fixture(settings: Settings, herm_store: HermRunStore | None) -> StartFixture | None:
        if settings.fixture_path is None:
            return None
        from hermes_server.testing.load import StartFixture

        return StartFixture(settings.fixture_path, herm_store)

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
