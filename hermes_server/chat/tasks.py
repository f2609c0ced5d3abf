"""Chat turns in flight, owned by the server rather than by the request that started them.

A client that disconnects must neither stop the agent nor undo its writes (a
disconnect is not a rollback), so a turn runs in a task kept here; shutdown and the
fixture reset wait for these tasks before they close or wipe the database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("hermes_server")

class TurnTasks:
    """The set of running turn tasks."""

    def __init__(self) -> None:
        self.running: set[asyncio.Task[Any]] = set()
        # Turns started since the process began (/v1/toolsets changes after the first).
        self.started = 0

    def __len__(self) -> int:
        return len(self.running)

    def spawn(self, turn: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a chat turn in a task that outlives the request that started it."""
        task = asyncio.get_running_loop().create_task(turn)
        self.started += 1
        self.running.add(task)
        task.add_done_callback(self.running.discard)
        return task

    async def reset(self) -> None:
        """Count turns from zero again, as a fresh server does (/v1/toolsets answers by it).

        The running tasks are not forgotten: shutdown still waits for them (a fixture reset
        has waited already)."""
        self.started = 0

    async def wait(self, timeout: float) -> None:
        """Give running turns up to `timeout` seconds to finish (none is cancelled)."""
        if self.running:
            await asyncio.wait(set(self.running), timeout=timeout)

    async def drain(self, timeout: float) -> None:
        """Let running turns finish (and write); cancel those still running after `timeout`."""
        if not self.running:
            return
        _, stuck = await asyncio.wait(set(self.running), timeout=timeout)
        for task in stuck:
            task.cancel()
        if stuck:
            log.warning("shutdown: cancelled %d chat turn(s) still running after %.0fs", len(stuck), timeout)
            await asyncio.wait(stuck)
