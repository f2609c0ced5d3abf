"""AppContext: what every handler of one server shares besides the request.

Built once by `app.py`, the composition root, from parts it builds and hands in:
nothing is filled in later and nothing is optional. Test control changes behaviour
only through what it is given here when the app is composed (`hooks`) and through
the clock and id source's own modes, so a handler never asks whether a test feature
is switched on. Where Hermes releases (or the deviations of docs/differences.md) answer
differently, a handler is given the strategy of the release served (`behaviour`, set by
that release's units, hermes_server/units/), so it never asks which release it answers
as. Every part that holds state is registered in `state` as well, which a fixture reset
walks (state.py; tests/unit/test_state.py checks none is missed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hermes_server.agents.base import Agent
from hermes_server.chat.hooks import NO_HOOKS, Hooks
from hermes_server.chat.replay import ReplayCache
from hermes_server.chat.runs import Runs
from hermes_server.chat.slots import Slots
from hermes_server.chat.stream_runs import UNTRACKED_STREAMS, StreamRuns
from hermes_server.chat.tasks import TurnTasks
from hermes_server.chat.turn import TurnOutcome
from hermes_server.config import Settings
from hermes_server.domain.clock import Clock
from hermes_server.domain.create_fields import given_fields
from hermes_server.domain.ids import IdSource, create_id_error
from hermes_server.domain.model_lock import Inventory
from hermes_server.domain.paging import PageRequest, whole_transcript
from hermes_server.domain.profiles import HERMES_0_19, Features
from hermes_server.domain.projection import PLAIN_SESSIONS, SessionShape
from hermes_server.domain.response_history import stored_history
from hermes_server.domain.route_ids import RouteId
from hermes_server.domain.runtime import no_runtime
from hermes_server.state import StateRegistry
from hermes_server.store.db import Database
from hermes_server.store.jobs import JobsFile
from hermes_server.store.read_cache import ReadCache
from hermes_server.store.responses import ResponseStore
from hermes_server.store.runs_idempotency import NO_RUN_KEYS, RunKeys
from hermes_server.store.schema import PLAIN, Reading

if TYPE_CHECKING:
    from hermes_server.http.routing import Route


def _leave_runs(runs: Runs) -> None:
    """Before 0.21.4 a shutdown leaves its runs to the turn drain (a turn still running after it is
    cancelled: `cancelled`)."""


@dataclass(frozen=True, kw_only=True)
class Behaviour:
    """How handlers behave where Hermes releases, or hermes-server and 0.19.0, differ: one strategy per
    field, 0.19.0's by default (as hermes-server answers it). The units a server is composed of set
    them (hermes_server/units/), once, when the app is built; docs/versions.md and
    docs/differences.md list what each one changes."""

    # The session object and PATCH's fields (0.20.4: the flags).
    sessions: SessionShape = PLAIN_SESSIONS
    # The (model, source) a create stores, given its body and the served model name.
    new_session: Callable[[dict[str, Any], str], tuple[Any, str]] = given_fields
    # The page of `GET /api/sessions/{id}/messages` a query asks for (0.20.4).
    message_pages: Callable[[dict[str, str]], PageRequest] = whole_transcript
    # Which newer state.db columns reads use, where the file has them.
    reading: Reading = PLAIN
    # A chat turn's `runtime` block (0.20.4), given the session's model_config and the body.
    turn_runtime: Callable[[Any, dict[str, Any], Inventory], dict[str, Any] | None] = no_runtime
    # What a session chat stream's `run_id` is (0.20+: a run).
    stream_runs: StreamRuns = UNTRACKED_STREAMS
    # Where Idempotency-Key records of runs are kept (0.21: runs_idempotency.db).
    run_keys: RunKeys = NO_RUN_KEYS
    # What a shutdown does to the runs still live, when it begins (0.21.6: settles them `interrupted`).
    at_shutdown: Callable[[Runs], None] = _leave_runs
    # The profiles a `/p/<profile>/` prefix may name (a route under another's prefix answers 404
    # "Unknown or unconfigured profile"); None: the prefix is ignored (0.19, 0.20). From 0.21 the
    # server's own (`default`); a multiplexing server's, all it serves (multiplex.py).
    served_profiles: frozenset[str] | None = None
    # Whether a home holding named profiles (`profiles/<name>/`) is served multiplexed, each under
    # `/p/<name>/` (0.21.6; cli/profiles.py reads it).
    multiplexes_profiles: bool = False
    # The deviations (docs/differences.md): hermes-server's rule unless `--upstream-quirks`.
    # D3: which ids a create refuses.
    create_id_problem: Callable[[str], str | None] = create_id_error
    # D2: whether /messages of a forked compression parent reads the fork.
    fork_takes_over_messages: bool = False
    # D6: whether a Responses instruction that is not text reaches the turn.
    lax_instructions: bool = False
    # D9: what a chained Responses request continues from.
    history_after_turn: Callable[[list[dict[str, Any]], Any, list[dict[str, Any]]], list[dict[str, Any]]] = (
        stored_history)
    # D10: whether a response stream sends upstream's events only.
    upstream_response_events: bool = False
    # D11: whether a request head past a limit is refused with 0.19.0's own text (the transport,
    # cli/transport.py, reads it from the built app: such a head never reaches a handler).
    upstream_head_refusals: bool = False


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
    replays: ReplayCache[TurnOutcome]
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
    # OpenAPI components (by section) of the served families, units and dialects; the document
    # emits those its operations name.
    api_components: dict[str, Any] = field(default_factory=dict)
    # How handlers behave where releases differ (the served units' strategies).
    behaviour: Behaviour = field(default_factory=Behaviour)
    # The Hermes release answered as (`--hermes-version`), as /health reports it, and the capability
    # flags and endpoint order of its /v1/capabilities.
    version: str = HERMES_0_19.version
    features: Features = HERMES_0_19.features
    endpoint_order: tuple[RouteId, ...] = HERMES_0_19.endpoint_order
    # When this app began serving, as /health/detailed reports it.
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def now(self) -> float:
        """Current Unix time in float seconds."""
        return self.clock.now()
