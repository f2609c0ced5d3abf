"""What a handler needs besides the request: settings, the database, the clock, ids.

The optional parts exist only for the test-control extensions (DECISIONS.md
"Extensions"): `faults` and `journal` are None unless `serve --fixture-api`,
`id_suffix` is None unless `serve --deterministic`; handlers test for None, so
the default server pays nothing for them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Coroutine

from hermes_server.agents import build_agent
from hermes_server.agents.base import Agent
from hermes_server.config import Settings
from hermes_server.domain.ids import generate_session_id
from hermes_server.store.db import Database

if TYPE_CHECKING:
    from hermes_server.faults import FaultRegistry
    from hermes_server.fixtures.journal import Journal
    from hermes_server.routes.openai_compat import ReplayCache

log = logging.getLogger("hermes_server")

# How long shutdown waits for chat turns still running before it cancels them.
TURN_DRAIN_SECONDS = 15.0


@dataclass
class Services:
    """Shared by every request of one app instance."""

    settings: Settings
    db: Database
    clock: Callable[[], float] = field(default=time.time)
    # Source of the 8-hex part of generated ids; None means a random uuid4 prefix, as upstream.
    id_suffix: Callable[[], str] | None = None
    faults: FaultRegistry | None = None
    journal: Journal | None = None
    # The decoded `serve --fixture` document, which `POST /_fixture/reset` goes back to.
    fixture_document: Any = None
    # The chat agent (`--agent`); built from the settings when not given.
    agent: Agent | None = None
    # Chat turns in flight. They belong here, not to a response, so a client that
    # disconnects does not cancel them; shutdown waits for them (`drain_turns`).
    turns: set[asyncio.Task[Any]] = field(default_factory=set)
    # /v1/chat/completions answers remembered by Idempotency-Key (created on first use).
    completion_replays: ReplayCache | None = None

    def __post_init__(self) -> None:
        if self.agent is None:
            self.agent = build_agent(self.settings)

    def now(self) -> float:
        """Current Unix time in float seconds (settable in deterministic mode)."""
        return self.clock()

    def new_session_id(self) -> str:
        """A generated id in upstream's `api_<seconds>_<8 hex>` form."""
        return generate_session_id(self.now(), self.id_suffix)

    def continuation_suffix(self) -> Callable[[], str] | None:
        """Where a compression continuation id gets its 6 hex: the seeded source in
        deterministic mode, else None (random, as upstream)."""
        suffix = self.id_suffix
        return None if suffix is None else (lambda: suffix()[:6])

    def spawn(self, turn: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a chat turn in a task that outlives the request that started it."""
        task = asyncio.get_running_loop().create_task(turn)
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)
        return task

    async def drain_turns(self, timeout: float = TURN_DRAIN_SECONDS) -> None:
        """Let running turns finish (and write); cancel those still running after `timeout`."""
        if not self.turns:
            return
        pending = set(self.turns)
        _, stuck = await asyncio.wait(pending, timeout=timeout)
        for task in stuck:
            task.cancel()
        if stuck:
            log.warning("shutdown: cancelled %d chat turn(s) still running after %.0fs", len(stuck), timeout)
            await asyncio.wait(stuck)
