"""Running one chat turn: load the history, record the turn, drive the agent.

Shared by session chat (`/chat`, `/chat/stream`) and `/v1/chat/completions`, so
every route leaves the same rows for a turn. The turn runs in a task owned by the
server (`chat/tasks.py`), not by the HTTP response, so a client that disconnects
neither stops the agent nor undoes its writes (a disconnect is not a rollback).
Storage failures during a turn are logged (once per turn, whichever of its two
writes failed first) and never fail the turn, as upstream's agent does; an exception
from the agent itself reaches the caller, which `answer` turns into `AgentFailed`
for the routes that wait for the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_server.agents.base import (
    SYSTEM_PROMPT,
    Agent,
    AgentError,
    AgentEvent,
    ApprovalGate,
    Delta,
    TurnRequest,
    TurnResult,
    assistant_message,
)
from hermes_server.chat.hooks import Hooks, Point
from hermes_server.chat.interrupt import Stop, TurnStopped, held, stoppable
from hermes_server.chat.replay import Idempotency, ReplayCache
from hermes_server.chat.tasks import TurnTasks
from hermes_server.config import Settings
from hermes_server.domain.clock import Clock
from hermes_server.domain.compression import continuation_id
from hermes_server.domain.content import UserMessage, conversation_history, stored_user_content
from hermes_server.domain.errors import AgentFailed, StorageFault, UpstreamCrash
from hermes_server.domain.ids import IdSource
from hermes_server.domain.projection import message_projection
from hermes_server.domain.usage import Usage
from hermes_server.store import messages, turns
from hermes_server.store.db import Database

log = logging.getLogger("hermes_server.chat")


class TurnContext(Protocol):
    """What a turn needs of the server (the app's context provides it)."""

    settings: Settings
    db: Database
    agent: Agent
    clock: Clock
    ids: IdSource
    hooks: Hooks
    turns: TurnTasks
    replays: ReplayCache[TurnOutcome]


@dataclass(frozen=True)
class ChatTurn:
    """A validated chat request."""

    session_id: str  # the exact path id
    user_message: UserMessage
    # The turn's instruction, or None; a run or response may carry another JSON value (see `run_turn`).
    system_message: Any
    session_key: str | None
    # What the model sees before the turn when the client sends it (chat completions
    # without X-Hermes-Session-Id); None: the session's stored history. Never stored.
    history: list[dict[str, Any]] | None = None
    # A structured run's stop request and approval gate (other routes have neither).
    stop: Stop | None = None
    approvals: ApprovalGate | None = None
    # What the model is given as the user message when that is not `user_message` (a run or
    # response folds it into a user message right before it, as 0.19.0's agent does); never stored.
    prompt: UserMessage | None = None
    # The `runtime` block the 0.20+ profiles add to session chat (domain/runtime.py); None in 0.19.0.
    runtime: dict[str, Any] | None = None


@dataclass(frozen=True)
class TurnOutcome:
    """What the routes answer with once the turn is over."""

    session_id: str  # the effective id: a continuation's id when the turn rotated
    final_text: str | None
    usage: Usage
    messages: list[dict[str, Any]]  # this turn's assistant/tool messages, sparse projection


async def load_history(ctx: TurnContext, turn: ChatTurn) -> list[dict[str, Any]]:
    """Active messages of the exact id in conversation form; on failure, empty (logged, no text)."""
    session_id = turn.session_id
    try:
        await ctx.hooks.at(Point.HISTORY_LOAD).happen()  # test control may fail it, handled as upstream does
        rows = await ctx.db.read(messages.active_messages, session_id)
    except Exception as exc:  # noqa: BLE001 - upstream runs the turn without history
        log.warning("history of session %r could not be loaded (%s); running the turn with empty history",
                    session_id, type(exc).__name__)
        return []
    return conversation_history(rows)


class _Bookkeeping:
    """The storage outcome of one turn: its first failure is logged, later ones are not."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.reported = False

    def failed(self, part: str, exc: Exception) -> None:
        if self.reported:
            return
        self.reported = True
        cause = exc.reason if isinstance(exc, StorageFault) else type(exc).__name__
        log.warning("session %r: this turn is answered but not stored whole: %s could not be written (%s)",
                    self.session_id, part, cause)


async def _begin(ctx: TurnContext, turn: ChatTurn, history: list[dict[str, Any]],
                 book: _Bookkeeping) -> turns.TurnStart:
    now = ctx.clock.now()
    try:
        await ctx.hooks.at(Point.PERSIST).happen()  # test control may fail it: the whole turn goes unrecorded
        return await ctx.db.write(
            turns.begin_turn, turn.session_id,
            model=ctx.agent.model, system_prompt=SYSTEM_PROMPT, fresh_history=not history,
            user_content=stored_user_content(turn.user_message), now=now,
            compress_after=ctx.settings.compress_after_messages,
            continuation_id=continuation_id(now, ctx.ids.continuation_suffix()),
        )
    except Exception as exc:  # noqa: BLE001 - a turn is not failed by its bookkeeping
        book.failed("its user message", exc)
        return turns.TurnStart(turn.session_id)


async def _finish(ctx: TurnContext, turn: ChatTurn, session_id: str, result: TurnResult,
                  book: _Bookkeeping, accounted: bool = True) -> None:
    try:
        await ctx.hooks.at(Point.PERSIST).happen()
        await ctx.db.write(
            turns.finish_turn, session_id, result.messages, result.usage if accounted else None,
            model=ctx.agent.model, reported_model=result.model, now=ctx.clock.now(),
        )
    except Exception as exc:  # noqa: BLE001 - as in _begin
        book.failed("its reply", exc)


async def run_turn(ctx: TurnContext, turn: ChatTurn,
                   on_event: Callable[[AgentEvent], None] | None = None) -> TurnOutcome:
    """Run one turn to completion; `on_event` sees every agent event except the result."""
    history = turn.history if turn.history is not None else await load_history(ctx, turn)
    book = _Bookkeeping(turn.session_id)
    start = await _begin(ctx, turn, history, book)
    if turn.system_message is not None and not isinstance(turn.system_message, str):
        # Where 0.19.0's agent fails, its user row written, adding the instruction to its system prompt.
        raise UpstreamCrash("TypeError",
                            f'can only concatenate str (not "{type(turn.system_message).__name__}") to str')
    request = TurnRequest(
        turn.session_id,
        [start.summary] if start.summary else history,
        turn.user_message if turn.prompt is None else turn.prompt,
        turn.system_message,
        turn.approvals,
    )
    result: TurnResult | None = None
    streamed: list[str] = []
    try:
        async for event in stoppable(held(ctx.settings.agent_delay, ctx.agent.run(request)), turn.stop):
            if isinstance(event, TurnResult):
                result = event
            elif result is None:
                if isinstance(event, Delta):
                    streamed.append(event.text)
                if on_event is not None:
                    on_event(event)
    except TurnStopped:
        # What a stopped turn leaves: its user row, and the text streamed so far as an
        # assistant row without finish reason; no model call is accounted.
        if streamed:
            partial = TurnResult("".join(streamed), Usage(), [assistant_message("".join(streamed), None)])
            await _finish(ctx, turn, start.target_id, partial, book, accounted=False)
        raise
    if result is None:
        raise AgentError("the agent ended the turn without a result")
    await _finish(ctx, turn, start.target_id, result, book)
    return TurnOutcome(
        start.target_id,
        result.final_text,
        result.usage,
        [message_projection(m, sparse=True) for m in result.messages if m.get("role") in ("assistant", "tool")],
    )


async def answer(ctx: TurnContext, turn: ChatTurn, failure: type[AgentFailed] = AgentFailed,
                 idempotency: Idempotency | None = None) -> TurnOutcome:
    """Run a turn for a client that waits for its outcome; an agent exception becomes `failure`.

    The turn is spawned and shielded: the client going away cancels only the wait. With
    `idempotency`, a retry of the same request gets the first one's turn (chat/replay.py):
    its outcome when it is over, else a wait on it.
    """
    def start() -> asyncio.Task[TurnOutcome]:
        return ctx.turns.spawn(run_turn(ctx, turn))

    if idempotency is None:
        return await _settle(turn, asyncio.shield(start()), failure)
    return await _settle(turn, ctx.replays.run(idempotency, start), failure)


async def _settle(turn: ChatTurn, outcome: Awaitable[TurnOutcome], failure: type[AgentFailed]) -> TurnOutcome:
    """Await a running turn's outcome; an agent exception is logged (its type only) and raised as `failure`."""
    try:
        return await outcome
    except Exception as exc:  # noqa: BLE001 - any agent failure is the caller's 500 envelope
        log.warning("session %r: the agent failed (%s)", turn.session_id, type(exc).__name__)
        raise failure(exc) from None
