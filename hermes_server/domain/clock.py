"""The server's clock: Unix time for every timestamp it writes, or a manual one for tests.

Tests that compare whole responses need the same timestamps on every run. With
`serve --deterministic` the clock starts at a fixed instant and advances by a fixed
step on every reading, so rows created one after another still sort in order; the
fixture control API can also set, advance or step it (which makes it manual). One
object for the life of the server: modes change inside it, nobody swaps it.
"""

from __future__ import annotations

import time

# 2030-01-01T00:00:00Z: far enough from "now" that fixture timestamps are obviously synthetic.
DETERMINISTIC_START = 1893456000.0
# Each reading advances a deterministic clock by 1 ms.
DETERMINISTIC_STEP = 0.001


class Clock:
    """System time, or a manual clock that only moves when read (by `step`) or when told to."""

    def __init__(self, deterministic: bool = False) -> None:
        self.deterministic = deterministic
        # The next manual reading; None while the clock follows system time.
        self.current: float | None = None
        self.step = 0.0
        self.restart()

    @property
    def manual(self) -> bool:
        return self.current is not None

    def restart(self) -> None:
        """Back to the start: the deterministic instant, else system time."""
        if self.deterministic:
            self.current, self.step = DETERMINISTIC_START, DETERMINISTIC_STEP
        else:
            self.current, self.step = None, 0.0

    async def reset(self) -> None:
        """`restart`, as a registered part of the server's state."""
        self.restart()

    def now(self) -> float:
        """The current time in float seconds; a manual clock then moves on by its step."""
        value = self.current
        if value is None:
            return time.time()
        self.current = value + self.step
        return value

    def peek(self) -> float:
        """The next reading, without advancing."""
        return time.time() if self.current is None else self.current

    def make_manual(self) -> None:
        """Stop following system time: stand still at the present moment until told otherwise."""
        if self.current is None:
            self.current, self.step = time.time(), 0.0

    def set(self, now: float) -> None:
        self.make_manual()
        self.current = now

    def advance(self, seconds: float) -> None:
        self.make_manual()
        assert self.current is not None
        self.current += seconds

    def set_step(self, step: float) -> None:
        self.make_manual()
        self.step = step
