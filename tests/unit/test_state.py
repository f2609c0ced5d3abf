"""Nothing a fixture reset must forget is left out of `ctx.state` (hermes_server/state.py).

Two checks on a real app (`create_app`), so that a part added later cannot be forgotten:

- every attribute of `AppContext` is registered (itself, or as what a registered part
  holds, as state.db is held by its `SessionRows`), or listed in STATELESS with the
  reason a reset may leave it alone;
- every registered part really forgets: each of its attributes that can change (a
  container, a number, a random generator) is made dirty, the registry is reset, and
  it must then equal the same attribute of a freshly built app, unless KEPT says why not.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from hermes_server.app import HermesApp, create_app
from hermes_server.config import Settings
from hermes_server.context import AppContext
from hermes_server.state import StateRegistry

# AppContext fields a reset leaves alone, and why.
STATELESS = {
    "settings": "frozen configuration",
    "agent": "the configured agent; the echo and script agents keep nothing between turns",
    "routes": "the route table, built once",
    "hooks": "test control's hook object: it holds only the fault registry, which is registered ('faults')",
    "api_components": "OpenAPI components of the served families, units and dialects, constant",
    "behaviour": "the served units' strategies, frozen; the one that keeps records (runs_idempotency.db) is "
                 "registered ('run_keys')",
    "version": "frozen configuration (--hermes-version)",
    "features": "frozen configuration (--hermes-version)",
    "endpoint_order": "frozen configuration (--hermes-version)",
    "started_at": "when the process began serving (/health/detailed): a reset does not restart the process",
    "slots": "the requests admitted now, which end by themselves; the turns it counts are 'turns'",
}
# Attributes of registered parts that a reset keeps, and why.
KEPT = {
    ("turns", "running"): "turns in flight finish and write; the reset has waited for them first",
    ("runs", "live"): "live runs are stopped by the reset; each run's own task forgets it when it ends",
    ("replays", "ttl"): "configuration",
    ("replays", "size"): "configuration",
    ("responses", "capacity"): "configuration",
    ("reads", "budget"): "configuration (--read-cache-mb)",
    ("reads", "_turns"): "builds in flight, which end by themselves",
}


def _app(tmp_path: Path, name: str, **options: Any) -> HermesApp:
    home = tmp_path / name
    home.mkdir()
    return create_app(Settings(home=home, fixture_api=True, **options))


def _held(part: object) -> list[object]:
    return list(vars(part).values()) if hasattr(part, "__dict__") else []


def _changeable(value: Any) -> bool:
    kinds = (dict, list, set, deque, random.Random, int, float)
    return isinstance(value, kinds) and not isinstance(value, bool)


def _summary(value: Any) -> Any:
    """What must match a fresh app's: a container's contents, a number, a generator's state."""
    if isinstance(value, random.Random):
        return value.getstate()
    if isinstance(value, (dict, list, set, deque)):
        return sorted(map(repr, value)) if isinstance(value, set) else list(map(repr, value))
    return value


def _dirty(part: object, name: str, value: Any) -> None:
    junk = object()
    if isinstance(value, dict):
        value[junk] = junk
    elif isinstance(value, (list, deque)):
        value.append(junk)
    elif isinstance(value, set):
        value.add(junk)
    elif isinstance(value, random.Random):
        value.random()
    else:
        setattr(part, name, value + 1)


async def _close(app: HermesApp) -> None:
    ctx = app.context
    await ctx.db.close()
    await ctx.response_store.close()
    if ctx.runs.keys is not None:
        await ctx.runs.keys.close()
    await app.dialects.close()


OPTIONS = [{"deterministic": True}, {"deterministic": False}, {"deterministic": True, "extras": {"herm_run": True}},
           {"hermes_version": "0.21.2"}]
IDS = ["deterministic", "random", "herm-run", "0.21.2"]


@pytest.mark.parametrize("options", OPTIONS, ids=IDS)
def test_every_context_attribute_is_registered_or_stateless(tmp_path: Path, options: dict[str, Any]) -> None:
    app = _app(tmp_path, "home", **options)
    ctx = app.context
    parts = list(ctx.state.parts().values())
    try:
        for field in dataclasses.fields(AppContext):
            value = getattr(ctx, field.name)
            registered = any(value is part or any(value is held for held in _held(part)) for part in parts)
            if field.name == "state":
                assert isinstance(value, StateRegistry)
            elif field.name in STATELESS:
                assert not registered, f"ctx.{field.name} is registered but listed as stateless"
            else:
                assert registered, f"ctx.{field.name} holds state that no registered part resets"
        if options.get("extras"):
            stores = [store for family in app.dialects.families for store in family.resettables.values()]
            assert stores, "the served dialect has no resettable part"
            assert all(any(store is part for part in parts) for store in stores), "a dialect's store is not registered"
    finally:
        asyncio.run(_close(app))


@pytest.mark.parametrize("options", OPTIONS, ids=IDS)
def test_every_registered_part_forgets_what_it_holds(tmp_path: Path, options: dict[str, Any]) -> None:
    used, fresh = _app(tmp_path, "used", **options), _app(tmp_path, "fresh", **options)
    fresh_parts = fresh.context.state.parts()
    checked = 0
    try:
        for name, part in used.context.state.parts().items():
            for attr, value in list(vars(part).items()):
                if _changeable(value) and (name, attr) not in KEPT:
                    _dirty(part, attr, value)
        asyncio.run(used.context.state.reset())
        for name, part in used.context.state.parts().items():
            assert list(fresh_parts) == list(used.context.state.parts())
            for attr, value in vars(part).items():
                if not _changeable(value) or (name, attr) in KEPT:
                    continue
                checked += 1
                expected = _summary(vars(fresh_parts[name])[attr])
                assert _summary(value) == expected, f"a reset leaves {name}.{attr} as it was"
        assert checked >= 12  # the stateful attributes seen, so that the check cannot pass by seeing none
        if options.get("hermes_version") == "0.21.2":  # runs_idempotency.db's records are a registered part
            assert used.context.state.parts()["run_keys"] is used.context.runs.keys
    finally:
        asyncio.run(_close(used))
        asyncio.run(_close(fresh))


def test_a_name_is_registered_once() -> None:
    state = StateRegistry()
    state.register("clock", StateRegistry())
    with pytest.raises(ValueError, match="clock"):
        state.register("clock", StateRegistry())
    assert list(state.parts()) == ["clock"]


def test_parts_reset_in_registration_order() -> None:
    order: list[str] = []

    class Part:
        def __init__(self, name: str) -> None:
            self.name = name

        async def reset(self) -> None:
            order.append(self.name)

    state = StateRegistry()
    for name in ("gate", "rows", "clock"):
        state.register(name, Part(name))
    asyncio.run(state.reset())
    assert order == ["gate", "rows", "clock"]
