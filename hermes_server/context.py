"""AppContext: what every handler of one server shares besides the request.

Built once by `app.py` and complete from the start: nothing is filled in later and
nothing is optional. Test control changes behaviour only through what it is given
here when the app is composed (`hooks`) and through the clock and id source's own
modes, so a handler never asks whether a test feature is switched on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hermes_server.agents.base import Agent
from hermes_server.chat.hooks import NO_HOOKS, Hooks
from hermes_server.chat.replay import ReplayCache
from hermes_server.chat.runs import Runs
from hermes_server.chat.slots import Slots
from hermes_server.chat.tasks import TurnTasks
from hermes_server.config import Settings
from hermes_server.domain.clock import Clock
from hermes_server.domain.ids import IdSource
from hermes_server.domain.quirks import DEFAULT_QUIRKS, Quirks
from hermes_server.state import StateRegistry
from hermes_server.store.db import Database
from hermes_server.store.read_cache import ReadCache
from hermes_server.store.responses import ResponseStore

if TYPE_CHECKING:
    from hermes_server.http.routing import Route


@dataclass
class AppContext:
    """Shared by every request of one app instance."""

    settings: Settings
    db: Database
    # The chat agent (`--agent`).
    agent: Agent
    # Every timestamp the server writes comes from here (manual in deterministic mode).
    clock: Clock
    # The random part of generated ids (seeded in deterministic mode).
    ids: IdSource
    # The routes this instance serves, which discovery describes.
    routes: list[Route]
    hooks: Hooks = NO_HOOKS
    # OpenAPI components (by section) the served dialects' operations name; none by default.
    api_components: dict[str, Any] = field(default_factory=dict)
    # Which documented deviations from 0.19.0 are switched off (`--upstream-quirks`).
    quirks: Quirks = DEFAULT_QUIRKS
    # Chat turns in flight; they outlive the request that started them.
    turns: TurnTasks = field(default_factory=TurnTasks)
    # /v1/chat/completions answers remembered by Idempotency-Key.
    replays: ReplayCache = field(default_factory=ReplayCache)
    # The stateful parts registered for reset (`POST /_fixture/reset` walks them).
    state: StateRegistry = field(default_factory=StateRegistry)
    # When this app began serving, as /health/detailed reports it.
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    # Structured runs (in memory, as upstream keeps them) and the Responses API store
    # (response_store.db beside state.db, opened when the server starts).
    runs: Runs = field(init=False)
    response_store: ResponseStore = field(init=False)
    # The cap on live agent turns that runs, responses and chat completions enforce.
    slots: Slots = field(init=False)
    # Session reads' answers, remembered until state.db changes (`--read-cache-mb`).
    reads: ReadCache = field(init=False)

    def __post_init__(self) -> None:
        self.runs = Runs(self.clock)
        self.slots = Slots(self.settings.max_concurrent_runs, self.turns)
        self.response_store = ResponseStore(self.settings.response_store_path)
        self.reads = ReadCache(self.db, int(self.settings.read_cache_mb * 1024 * 1024))

    def now(self) -> float:
        """Current Unix time in float seconds."""
        return self.clock.now()
