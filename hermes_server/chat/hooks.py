"""The points where test control may interfere with a request, and the default that does nothing.

Fork, the chat turn and every stream ask `hooks.at(point)` at the moments a real Hermes
can fail: between fork's writes, loading a turn's history, storing it, while streaming.
The answer is what happens there (an `Action`): the default server's `NO_HOOKS` always
answers `CARRY_ON`, which does nothing; the fixture control API composes in hooks that
make the installed faults act, each fault kind owning its effect (testing/fault_kinds.py).
The core never imports that implementation, and never says which request asks: test
control knows it from the request's context, which the turn a request starts inherits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from enum import Enum
from typing import Protocol


class Point(Enum):
    """Where a use case asks."""

    # After one of fork's four writes; `step`: 1 close, 2 child, 3 messages, 4 title.
    FORK_STEP = "fork_step"
    # A chat turn loads its history.
    HISTORY_LOAD = "history_load"
    # A chat turn stores its rows (each of its two writes asks; the answer is the same).
    PERSIST = "persist"
    # A stream's frames go out.
    STREAM = "stream"


class Action:
    """What happens at a point. This one, `CARRY_ON`, does nothing."""

    async def happen(self) -> None:
        """At a step (fork's, a turn's load or write): may wait, or raise to stop or fail the operation there."""

    def frames(self, frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """At `Point.STREAM`: the frames that go out."""
        return frames


CARRY_ON = Action()


class Hooks(Protocol):
    """What fork, the chat turn and the streams ask test control."""

    def at(self, point: Point, **where: int) -> Action:
        """What happens at `point` for the request being served (`where`: the place, e.g. fork's `step`)."""
        ...


class NoHooks:
    """The default: nothing ever interferes."""

    def at(self, point: Point, **where: int) -> Action:
        return CARRY_ON


NO_HOOKS: Hooks = NoHooks()
