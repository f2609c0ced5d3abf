"""A dialect is a unit that registers: outside its own package it is named once, in the registry.

Everything else (options, settings, fixtures, test control, the composition root) reaches it
through `families.Dialect` and `families.Family`, so adding a dialect adds one registry line.
"""

from __future__ import annotations

import re
from pathlib import Path

from hermes_server.dialects import KNOWN
from hermes_server.families import FixtureParts

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_server"
MENTION = re.compile(r"herm[._-]?run", re.IGNORECASE)


def mentioning() -> set[str]:
    """The modules outside hermrun/ that name herm.run in code, strings, comments or docstrings."""
    return {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
            if path.relative_to(PACKAGE).parts[0] != "hermrun" and MENTION.search(path.read_text(encoding="utf-8"))}


def test_herm_run_is_named_outside_its_package_only_by_the_registry() -> None:
    assert mentioning() == {"dialects.py"}


def test_the_counter_sees_every_spelling() -> None:
    for spelling in ("herm.run", "herm_run", "herm-run", "hermrun", "HermRun", "HERM_RUN"):
        assert MENTION.search(spelling), spelling


def test_each_known_dialect_declares_a_switch_among_its_rows_and_groups_them() -> None:
    for dialect in KNOWN:
        dests = [option.dest for option in dialect.options]
        assert dialect.switch in dests and len(set(dests)) == len(dests)
        assert {option.group for option in dialect.options} == {dialect.group}


def test_a_known_dialect_off_refuses_its_fixture_key_by_name_and_on_checks_it() -> None:
    from hermes_server.config import Settings
    from hermes_server.families import with_defaults

    off = with_defaults(Settings(home=Path("/nonexistent")), KNOWN)
    keyed = [d for d in KNOWN if d.fixture_key]
    parts = FixtureParts.of(KNOWN, off)
    assert {d.fixture_key: d.needs for d in keyed} == dict(parts.refused) and not parts.parsers
    on = Settings(home=Path("/nonexistent"), extras={**off.extras, **{d.switch: True for d in KNOWN}})
    assert set(FixtureParts.of(KNOWN, on).parsers) == {d.fixture_key for d in keyed}
    assert set(FixtureParts.of(KNOWN, None).parsers) == {d.fixture_key for d in keyed}  # `seed`: no server


async def _reset_order(names: list[str]) -> list[str]:
    from hermes_server.state import StateRegistry

    seen: list[str] = []

    class Part:
        def __init__(self, name: str) -> None:
            self.name = name

        async def reset(self) -> None:
            seen.append(self.name)

    registry = StateRegistry()
    for name in names:
        registry.register(name, Part(name))
    await registry.reset()
    return seen


def test_the_state_registry_resets_in_registration_order_and_refuses_a_second_name() -> None:
    import asyncio

    import pytest

    from hermes_server.state import StateRegistry

    assert asyncio.run(_reset_order(["b", "a", "c"])) == ["b", "a", "c"]
    registry = StateRegistry()
    registry.register("x", StateRegistry())
    with pytest.raises(ValueError, match="'x'"):
        registry.register("x", StateRegistry())


def test_the_app_composes_a_served_dialect_from_its_unit_alone(tmp_path: Path) -> None:
    """Routes, their database, components, CORS headers and resettables come from the Family."""
    from hermes_server.app import HermesApp
    from hermes_server.config import Settings

    plain = HermesApp(Settings(home=tmp_path / "plain"))
    assert plain.dialects.families == ()
    core = dict(plain.context.state.parts())
    for dialect in KNOWN:
        app = HermesApp(Settings(home=tmp_path / dialect.switch, extras={dialect.switch: True}))
        (family,) = app.dialects.families
        served = {route.name for route in app.context.routes}
        assert {route.name for route in family.routes} <= served
        assert set(app.dialects.databases) == {route.name for route in family.routes}
        assert app.dialects.cors_headers == family.cors_headers
        # The core's parts, and the dialect's beside them, under its own names.
        assert dict(app.context.state.parts()).keys() == core.keys() | family.resettables.keys()
        assert all(app.context.state.parts()[name] is part for name, part in family.resettables.items())
        assert app.settings.extras.keys() >= dialect.defaults().keys()  # every row of its own readable
