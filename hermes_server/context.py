"""AppContext: what every handler of one server shares besides the request.

Built once by `app.py`, the composition root, from parts it builds and hands in:
nothing is filled in later and nothing is optional. Test control changes behaviour
only through what it is given here when the app is composed (`hooks`) and through
the clock and id source's own modes, so a handler never asks whether a test feature
is switched on. Every part that holds state is registered in `state` as well, which
a fixture reset walks (state.py; tests/unit/test_state.py checks none is missed).
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
from hermes_server.domain.profiles import HERMES_0_19, Profile
from hermes_server.domain.quirks import DEFAULT_QUIRKS, Quirks
from hermes_server.state import StateRegistry
from hermes_server.store.db import Database
from hermes_server.store.jobs import JobsFile
from hermes_server.store.read_cache import ReadCache
from hermes_server.store.responses import ResponseStore

if TYPE_CHECKING:
    from hermes_server.http.routing import Route


@dataclass(kw_only=True)
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
    # Every stateful part of this server, which a fixture reset walks.
    state: StateRegistry
    # Chat turns in flight; they outlive the request that started them.
    turns: TurnTasks
    # /v1/chat/completions answers remembered by Idempotency-Key.
    replays: ReplayCache
    # Structured runs (in memory, as upstream keeps them).
    runs: Runs
    # The Responses API store (response_store.db beside state.db, opened when the server starts).
    response_store: ResponseStore
    # The cap on live agent turns that runs, responses and chat completions enforce.
    slots: Slots
    # Session reads' answers, remembered until state.db changes (`--read-cache-mb`).
    reads: ReadCache
    # HERMES_HOME/cron/jobs.json.
    jobs: JobsFile
    hooks: Hooks = NO_HOOKS
    # OpenAPI components (by section) the served dialects' operations name; none by default.
    api_components: dict[str, Any] = field(default_factory=dict)
    # Which documented deviations from 0.19.0 are switched off (`--upstream-quirks`).
    quirks: Quirks = DEFAULT_QUIRKS
    # The Hermes release answered as (`--hermes-version`): what /health and capabilities report.
    profile: Profile = HERMES_0_19
    # When this app began serving, as /health/detailed reports it.
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def now(self) -> float:
        """Current Unix time in float seconds."""
        return self.clock.now()
