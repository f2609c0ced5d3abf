"""The reset protocol: every part of a server that holds state registers here, once.

The way moto's `moto-api/reset` walks every backend's own `reset()`: the parts
(state.db's session rows, the stored responses, runs, Idempotency-Key replays, the
cron jobs file, the clock, the id source, the turn counter, test control's own
faults and journal, each dialect's store) register when `app.py` composes the
server, and `POST /_fixture/reset` calls `StateRegistry.reset`, which resets each
in turn. A part added later cannot be forgotten by a hand-written list:
tests/unit/test_state.py fails for a stateful attribute that is not registered.

This module imports nothing of the package: any layer may hold a registry or be a part.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol


class Resettable(Protocol):
    """A part of the server's state that can go back to how a fresh server starts."""

    async def reset(self) -> None:
        """Forget everything since the start (the server goes on serving)."""


class StateRegistry:
    """The stateful parts of one server, by name, in registration order."""

    def __init__(self) -> None:
        self._parts: dict[str, Resettable] = {}

    def register(self, name: str, part: Resettable) -> None:
        """Add `part` under `name`; a name is registered once (a second one is a ValueError)."""
        if name in self._parts:
            raise ValueError(f"a state part named {name!r} is already registered")
        self._parts[name] = part

    def parts(self) -> Mapping[str, Resettable]:
        """Every registered part by name, in registration order (read-only)."""
        return MappingProxyType(self._parts)

    async def reset(self) -> None:
        """Reset every part, in registration order (test control registers first, so that an
        injected storage outage ends before state.db is emptied)."""
        for part in self._parts.values():
            await part.reset()
