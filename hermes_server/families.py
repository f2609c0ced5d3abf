"""Units that plug into the server: a route family (`Family`), and what a dialect (another
product's API) declares (`Dialect`).

Datasette composes its plugins by asking each one, at one place in `app()`, for what it
contributes (routes, ASGI wrappers, …). A route family is composed the same way: Hermes' own
families (routes/__init__.py `FAMILIES`) and each served dialect are a `Family`: its routes
and their database, its error rows and OpenAPI components, the checks of its security
schemes, its extra CORS request headers, its fixture part, its resettable parts and how it
closes. A dialect is declared by a `Dialect` (always importable, cheap: its option rows, its
fixture key, its switch) and built into its `Family` only when its switch is on. `app.py`,
the command line and test control act on these values and never name a family or a
dialect; the registry of known dialects is hermes_server/dialects.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hermes_server.config import Settings
from hermes_server.state import Resettable

if TYPE_CHECKING:
    from hermes_server.cli.options import Option
    from hermes_server.http.errors import Handler
    from hermes_server.http.pipeline import Check
    from hermes_server.http.routing import Route
    from hermes_server.store.db import Database, DatabaseFactory


class FixturePart(Protocol):
    """A served dialect's part of a fixture document: the top-level key it owns, loaded into
    the dialect's own store (after `Dialect.parse_fixture` checked it)."""

    key: str

    async def load(self, parsed: Any | None, *, replace: bool) -> dict[str, int]:
        """Write `parsed` (None: nothing, but still emptied when `replace`); what it wrote."""

    def summary(self, counts: Mapping[str, int]) -> str:
        """The line `hermes-server seed` prints about what this part wrote."""


async def _nothing_to_close() -> None:
    return None


@dataclass(frozen=True)
class Family:
    """What one served route family adds to the app."""

    name: str
    routes: list[Route]
    # The database each route is served from, by route name (storage faults act on it).
    databases: Mapping[str, Database] = field(default_factory=dict)
    # Rows merged into the app's error table (a dialect whose routes carry their own
    # envelope's `ErrorMap` adds none).
    errors: Mapping[type[BaseException], Handler] = field(default_factory=dict)
    # OpenAPI components (by section) its operations name.
    components: Mapping[str, Any] = field(default_factory=dict)
    # The check of each security scheme its operations name (the pipeline runs it first).
    checks: Mapping[str, Check] = field(default_factory=dict)
    # Request headers browsers may send to it (CORS `Access-Control-Allow-Headers`).
    cors_headers: tuple[str, ...] = ()
    fixture: FixturePart | None = None
    # Its own /_fixture/ routes, built only with `serve --fixture-api`.
    control_routes: Callable[[], list[Route]] = list
    # Its stateful parts, registered for `POST /_fixture/reset` by name.
    resettables: Mapping[str, Resettable] = field(default_factory=dict)
    close: Callable[[], Awaitable[None]] = _nothing_to_close


@dataclass(frozen=True)
class Dialect:
    """A dialect the server knows, served or not: enough to parse its options, refuse its
    fixture key by name when it is off, and build its `Family` when it is on."""

    name: str
    # Its `serve` option rows (the switch among them), listed in --help under `group`.
    options: tuple[Option, ...]
    group: str
    group_title: str
    # The `dest` of the row that switches it on.
    switch: str
    build: Callable[[Settings, DatabaseFactory], Family]
    # The fixture document key it owns, how its value is checked (raises DocumentError, problems
    # by JSON path under `$.<key>`; needs no store), and why it is refused while the dialect is off.
    fixture_key: str | None = None
    parse_fixture: Callable[[Any, float], Any] | None = None
    needs: str = ""
    # What `seed --help` says of its part: a sentence of the description, a note on --replace.
    seed_note: str = ""
    replace_note: str = ""
    # Checks and settles its resolved option values (by dest) before Settings is built;
    # raises OptionError with the refusal.
    settle: Callable[[dict[str, Any]], dict[str, Any]] = dict

    def served(self, settings: Settings) -> bool:
        return bool(settings.extras.get(self.switch))

    def refusal_when_off(self, sources: Mapping[str, str | None], on: bool) -> str | None:
        """Why its other options, given (`sources`: where each was given, by dest) while its
        switch is off, are refused: they would do nothing, and a silently ignored option
        misleads more than a refusal. None when it is on or none of them was given."""
        given = [where for dest, where in sources.items() if where and dest != self.switch]
        if on or not given:
            return None
        switch = next(option for option in self.options if option.dest == self.switch)
        env = f" (env {switch.env}=1)" if switch.env else ""
        return (f"refusing to start: {', '.join(given)} given without {switch.flag}{env}: "
                f"{self.name} is not served, so {'they' if len(given) > 1 else 'it'} would do nothing")

    def defaults(self) -> dict[str, Any]:
        """Its option values when no flag or environment variable is given."""
        return {option.dest: option.default for option in self.options}


def with_defaults(settings: Settings, dialects: tuple[Dialect, ...]) -> Settings:
    """`settings` with every known dialect's options present (defaults where not given), so a
    Settings built without the command line reads them as the command line would."""
    extras: dict[str, Any] = {}
    for dialect in dialects:
        extras.update(dialect.defaults())
    extras.update(settings.extras)
    return Settings(**{**settings.__dict__, "extras": extras})


@dataclass(frozen=True)
class FixtureParts:
    """What the dialects bring to one fixture document: each key they own, with how it is
    checked (`parsers`), loaded (`loaders`, when the dialect's store is at hand) or why it is
    refused (`refused`: the dialect is known but not served)."""

    parsers: Mapping[str, Callable[[Any, float], Any]] = field(default_factory=dict)
    loaders: Mapping[str, FixturePart] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> tuple[str, ...]:
        return (*self.parsers, *self.refused)

    @classmethod
    def of(cls, dialects: tuple[Dialect, ...], settings: Settings | None,
           families: tuple[Family, ...] = ()) -> FixtureParts:
        """The parts for a server of `settings` (None: outside any server, where every known
        dialect's key is checked), loaded through `families`' stores."""
        parsers: dict[str, Callable[[Any, float], Any]] = {}
        refused: dict[str, str] = {}
        for d in dialects:
            if d.fixture_key is None or d.parse_fixture is None:
                continue
            if settings is None or d.served(settings):
                parsers[d.fixture_key] = d.parse_fixture
            else:
                refused[d.fixture_key] = d.needs
        loaders = {f.fixture.key: f.fixture for f in families if f.fixture is not None}
        return cls(parsers, loaders, refused)
