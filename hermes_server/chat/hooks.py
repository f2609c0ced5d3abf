"""The points where test control may interfere with a request, and the default that does nothing.

Fork and the chat turn call these at the moments a real Hermes can fail (between
fork's writes, loading a turn's history, storing it, while streaming). The default
server uses `NO_HOOKS`; the fixture control API composes in an implementation that
injects the faults a test installed. The core never imports that implementation:
it only calls this protocol, with the scope of the request concerned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

Scope = Mapping[str, Any]


class Hooks(Protocol):
    """What fork, the chat turn and the chat stream ask test control."""

    async def fork_step_done(self, scope: Scope, step: int) -> None:
        """After fork's write number `step` (1 close, 2 child, 3 messages, 4 title); may wait, or raise to stop there."""

    def history_load_fails(self, scope: Scope | None) -> bool:
        """Whether this turn must behave as if loading its history raised."""

    def persistence_fails(self, scope: Scope | None) -> bool:
        """Whether this turn must not be stored although it answers normally."""

    def stream(self, scope: Scope, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The frames a stream sends (a fault may cut them short)."""


class NoHooks:
    """The default: nothing ever interferes."""

    async def fork_step_done(self, scope: Scope, step: int) -> None:
        return None

    def history_load_fails(self, scope: Scope | None) -> bool:
        return False

    def persistence_fails(self, scope: Scope | None) -> bool:
        return False

    def stream(self, scope: Scope, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        return frames


NO_HOOKS: Hooks = NoHooks()
