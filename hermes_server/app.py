"""create_app(settings): the composition root.

Builds the databases (through one factory, `DatabaseMaker`), every part the context
holds, the registry of stateful parts a fixture reset walks (state.py), the route
table, the request pipeline, and, only when asked for, the test-control layers,
each stacked once here (the way Datasette's `app()` wraps `asgi = Layer(asgi)`), so
the default server has no per-request branch for them. The test-control package is
imported only when a test feature is switched on, and a dialect's modules only when its
switch is: without it its paths are simply not routed.

Everything served is a unit composed here by one loop per hook, never by name: Hermes'
route families and each served dialect (`families.Family`), and the units of the release
answered as and of the deviations switched on (`units.unit.Unit`, `Release`), whose routes
the release's order places (domain/profiles.py).
"""

from __future__ import annotations

import asyncio
import functools
import operator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from hermes_server.agents import build_agent
from hermes_server.api.errors import HERMES_ERRORS
from hermes_server.chat.hooks import NO_HOOKS
from hermes_server.chat.replay import ReplayCache
from hermes_server.chat.runs import Runs
from hermes_server.chat.slots import Slots
from hermes_server.chat.tasks import TurnTasks
from hermes_server.config import Settings
from hermes_server.context import AppContext, Behaviour
from hermes_server.dialects import KNOWN
from hermes_server.domain.clock import Clock
from hermes_server.domain.ids import IdSource
from hermes_server.domain.profiles import HERMES_0_19, PROFILES, Profile
from hermes_server.domain.quirks import DEFAULT_QUIRKS, Quirks
from hermes_server.families import Family, FixtureParts, with_defaults
from hermes_server.http.auth import bearer_check
from hermes_server.http.errors import ErrorMap
from hermes_server.http.pipeline import Check, Pipeline
from hermes_server.http.routing import BEARER, Route, Router, in_order
from hermes_server.openapi import common
from hermes_server.openapi.build import merged
from hermes_server.openapi.document import build_document
from hermes_server.routes import FAMILIES
from hermes_server.state import StateRegistry
from hermes_server.store import migrate
from hermes_server.store.db import Database, DatabaseFactory, Prepare
from hermes_server.store.gate import NO_GATE, WriteGate
from hermes_server.store.home_check import present
from hermes_server.store.jobs import JobsFile
from hermes_server.store.read_cache import ReadCache
from hermes_server.store.responses import ResponseStore
from hermes_server.store.schema import PLAIN, Column, Reading
from hermes_server.store.seeding import SessionRows
from hermes_server.units import units_of
from hermes_server.units.unit import Unit

if TYPE_CHECKING:
    from hermes_server.http.errors import Handler
    from hermes_server.testing.load import StartFixture
    from hermes_server.testing.storage_gate import StorageGates


@dataclass
class Release:
    """The Hermes release served, composed: Hermes' route families and the units of the profile (then
    those of the deviations switched on), each hook called once over them, in that order."""

    profile: Profile
    units: tuple[Unit, ...]
    families: tuple[Family, ...]

    @classmethod
    def of(cls, profile: Profile, quirks: Quirks = DEFAULT_QUIRKS) -> Release:
        return cls(profile, units_of(profile, quirks), tuple(build() for build in FAMILIES))

    @functools.cached_property
    def routes(self) -> list[Route]:
        """The families' routes, with the routes the units add or change, amended as they say, in the
        release's order."""
        served: dict[str, Route] = {}
        for family in self.families:
            for route in family.routes:
                if route.name in served:
                    raise ValueError(f"two families serve a route named {route.name!r}")
                served[route.name] = route
        answered: dict[tuple[str, str], str] = {}  # (route, method) -> the unit that answers it
        for unit in self.units:
            for route in unit.routes():
                for method in route.methods:
                    if (route.name, method) in answered:
                        raise ValueError(f"units {answered[route.name, method]} and {unit.name} both answer "
                                         f"{method} {route.template}")
                    answered[route.name, method] = unit.name
                known = served.get(route.name)
                served[route.name] = route if known is None else known.replacing(route.methods)
        for unit in self.units:
            for change in unit.amendments:
                served[change.route] = served[change.route].amended(change)
        return in_order(list(served.values()), self.profile.route_order)

    @functools.cached_property
    def components(self) -> dict[str, dict[str, Any]]:
        """The OpenAPI components of the families, then of each unit (its own, then what it derives
        from those before it); the document emits the ones served operations name."""
        composed = merged(common.COMPONENTS, *(family.components for family in self.families))
        for unit in self.units:
            composed = merged(composed, unit.components)
            composed = merged(composed, unit.refine(composed))
        return composed

    @property
    def checks(self) -> dict[str, Check]:
        """The checks of the security schemes the families' operations name besides the bearer key's."""
        return {scheme: check for family in self.families for scheme, check in family.checks.items()}

    def errors(self) -> ErrorMap:
        """The Hermes error table with each unit's rows (a newer release's 401, 0.19.0's answers of the
        deviations switched on), each given the table composed before it."""
        table = HERMES_ERRORS
        for unit in self.units:
            table = table.merged(unit.errors(table))
        return table

    @property
    def columns(self) -> tuple[Column, ...]:
        """The columns the units store into (state.db gets them: store/migrate.py)."""
        return tuple(column for unit in self.units for column in unit.columns)

    @property
    def indexes(self) -> tuple[str, ...]:
        """The statements creating the indexes the units' reads need (after the columns exist)."""
        return tuple(sql for unit in self.units for sql in unit.indexes)

    @property
    def reading(self) -> Reading:
        """The newer columns reads use, where a file has them: what any unit asks for."""
        return functools.reduce(operator.or_, (unit.reading for unit in self.units), PLAIN)

    def behaviour(self, settings: Settings) -> Behaviour:
        """The strategies handlers are given: 0.19.0's, as each unit changes them, and what reads use."""
        behaviour = Behaviour()
        for unit in self.units:
            behaviour = unit.behaviour(behaviour, settings)
        return replace(behaviour, reading=self.reading)


def build_routes(profile: Profile = HERMES_0_19) -> list[Route]:
    """Every Hermes path a server answering as `profile` serves, in that release's order."""
    return Release.of(profile).routes


def openapi_document(profile: Profile = HERMES_0_19, *, fixture_api: bool = False) -> dict[str, Any]:
    """The /openapi.json a server answering as `profile` serves (with `fixture_api`, one started with
    `--fixture-api`), built without serving: docs/api.md is generated from these documents."""
    release = Release.of(profile)
    routes, components = release.routes, release.components
    if fixture_api:
        from hermes_server.testing.control import Control
        from hermes_server.testing.inspector import build_inspector_routes
        from hermes_server.testing.routes import build_fixture_routes

        control = Control([], None)
        routes = [*routes, *build_fixture_routes(control), *build_inspector_routes()]
        components = merged(components, control.components)
    return build_document(routes, components)


def build_errors(quirks: Quirks, profile: Profile = HERMES_0_19) -> ErrorMap:
    """The error table of a server answering as `profile` with `quirks`."""
    return Release.of(profile, quirks).errors()


def security_checks(settings: Settings, release: Release) -> dict[str, Check]:
    """The check of each security scheme the Hermes operations name (the pipeline runs them)."""
    return {BEARER: bearer_check(settings.api_key), **release.checks}


def state_db_preparer(settings: Settings, release: Release | None = None) -> migrate.Preparer:
    """How state.db is created or checked when it opens: with the columns the release's units store
    into, added to an existing file only under `--migrate-home` (store/migrate.py)."""
    release = release or Release.of(PROFILES[settings.hermes_version], Quirks.upstream(settings.upstream_quirks))
    return migrate.Preparer(release.columns, settings.migrate_home, settings.hermes_version, release.indexes)


class DatabaseMaker:
    """The one way this server builds a `Database` (a `DatabaseFactory`): with the configured
    reader threads and write retry, and the write gate test control gives that file (none
    without `--fixture-api`)."""

    def __init__(self, settings: Settings, gates: StorageGates | None) -> None:
        self.settings = settings
        self.gates = gates

    def __call__(self, path: Path, *, prepare: Prepare = migrate.prepare,
                 reader_threads: int | None = None) -> Database:
        gate: WriteGate = NO_GATE if self.gates is None else self.gates.of(path.name)
        threads = self.settings.reader_threads if reader_threads is None else reader_threads
        return Database(path, reader_threads=threads, write_retry_seconds=self.settings.write_retry_seconds,
                        prepare=prepare, gate=gate)


@dataclass
class Dialects:
    """The served dialects' units, and what they add together: routes, the database of each
    route (its storage faults act on it), error rows, OpenAPI components, the checks of their
    security schemes, and the request headers browsers may send them."""

    families: tuple[Family, ...] = ()
    routes: list[Route] = field(default_factory=list)
    databases: dict[str, Database] = field(default_factory=dict)
    components: dict[str, Any] = field(default_factory=dict)
    errors: dict[type[BaseException], Handler] = field(default_factory=dict)
    checks: dict[str, Check] = field(default_factory=dict)
    cors_headers: tuple[str, ...] = ()

    @classmethod
    def build(cls, settings: Settings, make_db: DatabaseFactory) -> Dialects:
        """Build each known dialect whose switch is on, its files opened like state.db."""
        families = tuple(d.build(settings, make_db) for d in KNOWN if d.served(settings))
        built = cls(families)
        for family in families:
            built.routes += family.routes
            built.databases.update(family.databases)
            built.errors.update(family.errors)
            built.components.update(family.components)
            built.checks.update(family.checks)
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
        # First: an unusable --agent configuration (ValueError) is refused before any store opens a file.
        agent = build_agent(settings)
        gates = None
        if settings.fixture_api:
            from hermes_server.testing.storage_gate import StorageGates

            gates = StorageGates()
        make_db = DatabaseMaker(settings, gates)
        profile = PROFILES[settings.hermes_version]
        release = Release.of(profile, Quirks.upstream(settings.upstream_quirks))
        db = make_db(settings.db_path, prepare=state_db_preparer(settings, release))
        self.dialects = dialects = Dialects.build(settings, make_db)
        routes = release.routes + dialects.routes
        errors = release.errors().merged(dialects.errors)
        parts = dialects.fixture_parts(settings)
        start_fixture = self._start_fixture(settings, parts)
        state = StateRegistry()
        control = None
        if gates is not None:
            from hermes_server.testing.control import Control

            control = Control(routes, start_fixture, dialects.families, parts, gates=gates)
            routes = control.wrap_routes(routes, errors, db, dialects.databases)
            control.register(state)  # first: an injected outage ends before state.db is emptied
        clock, turns = Clock(settings.deterministic), TurnTasks()
        behaviour = release.behaviour(settings)
        self.context = ctx = AppContext(
            settings=settings, db=db, agent=agent, clock=clock,
            ids=IdSource(settings.deterministic), routes=routes, state=state, turns=turns,
            replays=ReplayCache(), runs=Runs(clock, behaviour.run_keys),
            response_store=ResponseStore(settings.response_store_path),
            slots=Slots(settings.max_concurrent_runs, turns),
            reads=ReadCache(db, int(settings.read_cache_mb * 1024 * 1024)),
            jobs=JobsFile(settings.home, clock.now), hooks=control.hooks if control else NO_HOOKS,
            api_components=merged(release.components, dialects.components, control.components if control else {}),
            behaviour=behaviour, version=profile.version, features=profile.features,
            endpoint_order=profile.endpoint_order,
        )
        register_state(ctx, dialects)
        self.start_fixture = start_fixture
        pipeline = Pipeline(settings, Router(routes), self.context, errors,
                            checks={**security_checks(settings, release), **dialects.checks},
                            extra_cors_headers=dialects.cors_headers)
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
            try:
                message = await receive()
            except asyncio.CancelledError:
                # A second Ctrl-C (or SIGTERM) forces uvicorn out without a lifespan shutdown and the
                # loop's end cancels this wait: a stop asked for twice, not an error. Turns still
                # running are cancelled (no drain: the user asked not to wait) and the stores closed.
                await self._shut_down(0.0)
                return
            if message["type"] == "lifespan.startup":
                if not present(ctx.settings.db_path):
                    ctx.db.home_problems.check()  # a home that cannot hold state.db is named in the log now
                failure = None
                if self.start_fixture is not None:
                    failure = await self.start_fixture.startup(ctx.db, ctx.now())
                if failure is not None:
                    await send({"type": "lifespan.startup.failed", "message": failure})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._shut_down(ctx.settings.turn_drain_seconds)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _shut_down(self, drain_seconds: float) -> None:
        """Chat turns still running finish (and write) for up to `drain_seconds`, then the
        database and the other stores close."""
        ctx = self.context
        await ctx.turns.drain(drain_seconds)
        await ctx.agent.aclose()
        await ctx.db.close()
        await ctx.response_store.close()
        await ctx.runs.keys.close()
        await self.dialects.close()


def register_state(ctx: AppContext, dialects: Dialects) -> None:
    """Every stateful part of the context (and each dialect's store) in `ctx.state`, which a
    fixture reset walks in this order: the rows first, the clock and ids last."""
    state = ctx.state
    state.register("sessions", SessionRows(ctx.db))
    dialects.register(state)
    state.register("run_keys", ctx.runs.keys)
    for name, part in (("responses", ctx.response_store), ("runs", ctx.runs), ("replays", ctx.replays),
                       ("jobs", ctx.jobs), ("turns", ctx.turns), ("reads", ctx.reads), ("clock", ctx.clock),
                       ("ids", ctx.ids)):
        state.register(name, part)


def create_app(settings: Settings) -> HermesApp:
    """Build the ASGI app for `settings`."""
    return HermesApp(settings)
