"""The reset protocol: every stateful part of a server registers here, and a reset walks them.

Modelled on moto's `reset()`: a part that holds state a test can leave behind (a
database, an in-memory cache, a counter) says how to forget it, and registers once
under a name when the app is composed, so nothing has to remember to clear it by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class Resettable(Protocol):
    """A part of the server's state that can go back to how a fresh server starts."""

    async def reset(self) -> None: ...


class StateRegistry:
    """The stateful parts of one server, by name, in the order they registered."""

    def __init__(self) -> None:
        self._parts: dict[str, Resettable] = {}

    def register(self, name: str, part: Resettable) -> None:
        """Add `part`; a second part under one name is a composition mistake."""
        if name in self._parts:
            raise ValueError(f"a stateful part named {name!r} is registered already")
        self._parts[name] = part

    def parts(self) -> Mapping[str, Resettable]:
        return dict(self._parts)

    async def reset(self) -> None:
        """Reset every part, in registration order."""
        for part in self._parts.values():
            await part.reset()
