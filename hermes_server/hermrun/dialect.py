"""herm.run as a unit of hermes-server: its `serve` options, its fixture key, and its build.

This module is what the server knows of the dialect while it is off, so it stays light:
the routes, the store and the fixture format are imported only by `build` (when
`--herm-run` is on) and by `parse_fixture` (when a fixture document has a `herm_run` part).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes_server.cli.options import Option, OptionError, positive, text, whole
from hermes_server.config import Settings
from hermes_server.domain.keys import key_problem
from hermes_server.domain.wording import counted
from hermes_server.families import Dialect, Family
from hermes_server.hermrun import ALLOWANCE, KEY, SWITCH, WINDOW_SECONDS

if TYPE_CHECKING:
    from hermes_server.hermrun.store import HermRunStore
    from hermes_server.http.routing import Route
    from hermes_server.store.db import DatabaseFactory

FIXTURE_KEY = "herm_run"
GROUP = "herm.run"
# The key herm.run clients authenticate with, which browsers may then send (CORS).
API_KEY_HEADER = "x-api-key"

OPTIONS: tuple[Option, ...] = (
    Option(SWITCH.dest, "--herm-run", "HERMES_SERVER_HERM_RUN", False, text,
           "also serve herm.run's hosted sessions API (/v1/sessions, /v1/sandboxes/warm; docs/herm-run.md in the source), "
           "stored in herm-run.db beside state.db", group=GROUP, switch=True),
    # None: the same key as the Bearer one.
    Option(KEY.dest, "--herm-run-key", "HERMES_SERVER_HERM_RUN_KEY", None, text,
           "the key herm.run clients send in x-api-key", group=GROUP, metavar="KEY",
           shown_default="the bearer key"),
    # The default per-agent, per-subject conversation allowance of one fixed window.
    Option(ALLOWANCE.dest, "--herm-run-allowance", "HERMES_SERVER_HERM_RUN_ALLOWANCE", 5, whole(0),
           "sessions one subject may create with one agent per window (a fixture may set its own)",
           group=GROUP, metavar="N"),
    Option(WINDOW_SECONDS.dest, "--herm-run-window", "HERMES_SERVER_HERM_RUN_WINDOW", 60.0, positive,
           "length of the fixed allowance window", group=GROUP, metavar="S", shown_default="60"),
)


def settle(values: dict[str, Any]) -> dict[str, Any]:
    """A separate x-api-key is held to the same key policy as the Bearer one."""
    key = values.get(KEY.dest)
    if key is None:
        return values
    problem = key_problem(key)
    if problem:
        raise OptionError(f"refusing to start: --herm-run-key: {problem}")
    return {**values, KEY.dest: key.strip()}


def parse_fixture(value: Any, now: float) -> Any:
    from hermes_server.hermrun.fixture import parse_herm_run

    return parse_herm_run(value, now, f"$.{FIXTURE_KEY}")


def build(settings: Settings, make_db: DatabaseFactory) -> Family:
    """The served dialect: its routes over herm-run.db, which resets and closes with the app."""
    from hermes_server.hermrun import openapi
    from hermes_server.hermrun.routes import build_routes, security_checks
    from hermes_server.hermrun.store import HermRunStore

    store = HermRunStore(settings.home, make_db)
    routes = build_routes(store)

    def control_routes() -> list[Route]:
        from hermes_server.hermrun.fixture import control_routes as herm_control_routes

        return herm_control_routes(store)

    return Family(
        GROUP, routes, databases={route.name: store.db for route in routes}, components=openapi.COMPONENTS,
        checks=security_checks(settings), cors_headers=(API_KEY_HEADER,), fixture=HermRunPart(store),
        control_routes=control_routes, resettables={"herm_run": store}, close=store.close,
    )


class HermRunPart:
    """The `herm_run` key as a fixture part of one herm-run.db; the fixture format is imported
    on the first load (a served dialect without fixtures never imports it)."""

    key = FIXTURE_KEY

    def __init__(self, store: HermRunStore) -> None:
        self.store = store

    async def load(self, parsed: Any | None, *, replace: bool) -> dict[str, int]:
        from hermes_server.hermrun.fixture import HermRunFixture, load

        return (await load(self.store, parsed or HermRunFixture(), replace=replace)).as_json()

    def summary(self, counts: Mapping[str, int]) -> str:
        return (f"herm.run: {counted(counts['agents_written'], 'agent')}, "
                f"{counted(counts['sessions_written'], 'session')} into herm-run.db "
                f"(now {counted(counts['sessions_total'], 'session')})")


HERM_RUN = Dialect(
    "herm.run", OPTIONS, GROUP, "herm.run dialect (off by default)", switch=SWITCH.dest, build=build,
    fixture_key=FIXTURE_KEY, parse_fixture=parse_fixture,
    needs="herm.run fixtures need the dialect: serve --herm-run (env HERMES_SERVER_HERM_RUN=1)", settle=settle,
    seed_note="A `herm_run` part (docs/herm-run.md in the source) goes into HERMES_HOME/herm-run.db, checked with the rest.",
    replace_note="herm-run.db too, when the fixture has a herm_run part",
)
