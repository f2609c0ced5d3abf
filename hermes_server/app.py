"""create_app(settings): the composition root.

Builds the context every handler shares, the route table from each route family's
module, the request pipeline, and, only when asked for, the test-control layers,
each stacked once here (the way Datasette's `app()` wraps `asgi = Layer(asgi)`), so
the default server has no per-request branch for them. The test-control package is
imported only when a test feature is switched on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from hermes_server.agents import build_agent
from hermes_server.chat.hooks import NO_HOOKS
from hermes_server.config import Settings
from hermes_server.context import AppContext
from hermes_server.domain.clock import Clock
from hermes_server.domain.ids import IdSource
from hermes_server.http.errors import HERMES_ERRORS
from hermes_server.http.pipeline import Pipeline
from hermes_server.http.routing import Route, Router
from hermes_server.routes import chat, completions, discovery, responses, runs, sessions
from hermes_server.store.db import Database

if TYPE_CHECKING:
    from hermes_server.testing.load import StartFixture


def build_routes() -> list[Route]:
    """Every Hermes path this server serves, in upstream's order (discovery, sessions, chat)."""
    return [*discovery.routes(), *sessions.routes(), *chat.routes(), *completions.routes(), *responses.routes(),
            *runs.routes()]


class HermesApp:
    """The ASGI callable: lifespan here, HTTP through the composed layers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        db = Database(settings.db_path, reader_threads=settings.reader_threads,
                      write_retry_seconds=settings.write_retry_seconds)
        routes = build_routes()
        start_fixture = self._start_fixture(settings)
        control = None
        if settings.fixture_api:
            from hermes_server.testing.control import Control

            control = Control([route.name for route in routes], start_fixture)
            routes = control.wrap_routes(routes, HERMES_ERRORS, db)
        self.context = AppContext(
            settings, db, build_agent(settings), Clock(settings.deterministic), IdSource(settings.deterministic),
            routes, hooks=control.hooks if control else NO_HOOKS,
        )
        self.start_fixture = start_fixture
        pipeline = Pipeline(settings, Router(routes), self.context, HERMES_ERRORS)
        self.http: ASGIApp = control.wrap_app(pipeline) if control else pipeline

    @staticmethod
    def _start_fixture(settings: Settings) -> StartFixture | None:
        if settings.fixture_path is None:
            return None
        from hermes_server.testing.load import StartFixture

        return StartFixture(settings.fixture_path)

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
                failure = None
                if self.start_fixture is not None:
                    failure = await self.start_fixture.startup(ctx.db, ctx.now())
                if failure is not None:
                    await send({"type": "lifespan.startup.failed", "message": failure})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # Chat turns still running finish (and write) before the database closes.
                await ctx.turns.drain()
                await ctx.agent.aclose()
                await ctx.db.close()
                await ctx.response_store.close()
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_app(settings: Settings) -> HermesApp:
    """Build the ASGI app for `settings`."""
    return HermesApp(settings)
