"""The Responses API's use case (`POST /v1/responses`): what a request continues from, the
session its turn lands in, the turn, and the response kept for the next request.

Each request is one agent turn on a session: a new one (a uuid) unless it continues a
stored response (`previous_response_id`, or the latest response of a named
`conversation`), whose session it appends to. The model sees only the stored chain's
history (or the request's explicit `conversation_history`), never state.db's. Answered
responses are kept in `response_store.db` (`store/responses.py`) unless `store` is false.
The route (routes/responses.py) parses the request and keeps upstream's order of checks;
structured runs continue from a stored response the same way (`continuation`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from hermes_server.chat.replay import Idempotency
from hermes_server.chat.response_stream import ResponseStream
from hermes_server.chat.slots import Admission
from hermes_server.chat.stream import EventSink, TurnStream
from hermes_server.chat.turn import ChatTurn, TurnContext, answer
from hermes_server.domain.errors import CompletionFailed
from hermes_server.domain.response_history import model_turn
from hermes_server.domain.response_input import ResponseInput, output_items, user_turn
from hermes_server.store.responses import ResponseStore

log = logging.getLogger("hermes_server.chat")

NO_RESPONSE = "(No response generated)"
# What a chained request continues from, after a turn on a history (domain/response_history.py).
HistoryAfterTurn = Callable[[list[dict[str, Any]], Any, list[dict[str, Any]]], list[dict[str, Any]]]


class ResponseRules(Protocol):
    """The strategies of the release served that a Responses turn follows (context.Behaviour's)."""

    @property
    def history_after_turn(self) -> HistoryAfterTurn: ...

    @property
    def upstream_response_events(self) -> bool: ...


class ResponsesContext(TurnContext, Protocol):
    """What a Responses turn needs of the server (the app's context provides it)."""

    response_store: ResponseStore

    @property
    def behaviour(self) -> ResponseRules: ...


@dataclass(frozen=True)
class Continuation:
    """What a request continues from: the history before its turn, the stored session it
    appends to (None: none), and its instructions (a stored response's when it gives none)."""

    history: list[dict[str, Any]]
    session_id: Any
    instructions: Any


async def continuation(store: ResponseStore, previous: Any, history: list[dict[str, Any]], instructions: Any,
                       *, missing: Callable[[Any], Exception] | None) -> Continuation:
    """The stored response `previous` continued from, when the request names one and gives no
    history of its own. An unknown `previous` raises `missing(previous)` (the Responses API's
    404), or, with `missing` None, is ignored (structured runs, as upstream does)."""
    if history or not previous:
        return Continuation(history, None, instructions)
    stored = await store.get(previous)
    if stored is None:
        if missing is not None:
            raise missing(previous)
        return Continuation(history, None, instructions)
    return Continuation(list(stored.get("conversation_history") or []), stored.get("session_id"),
                        stored.get("instructions") if instructions is None else instructions)


@dataclass(frozen=True)
class ResponseTurn:
    """A request ready to run: its turn, and what its response is stored with."""

    turn: ChatTurn
    history: list[dict[str, Any]]  # before the turn's user message, as the request gave or continued it
    instructions: Any
    model: Any
    store: bool
    conversation: Any


async def prepare(ctx: ResponsesContext, parsed: ResponseInput, key: str | None,
                  missing: Callable[[Any], Exception]) -> ResponseTurn:
    """The turn of a parsed request: the history it continues (a named conversation's latest
    response, else `previous_response_id`; `missing` for an unknown one), its user message,
    and its session (the continued response's, else a new one)."""
    previous = parsed.previous_response_id
    if parsed.conversation:
        previous = await ctx.response_store.conversation(parsed.conversation)
    continued = await continuation(ctx.response_store, previous, parsed.history, parsed.instructions,
                                   missing=missing)
    history, user_message = user_turn(parsed.messages, continued.history, parsed.truncate)
    stored_session = continued.session_id
    session_id = stored_session if isinstance(stored_session, str) and stored_session else ctx.ids.uuid()
    seen, prompt = model_turn(history, user_message)
    turn = ChatTurn(session_id, user_message, continued.instructions or None, key, history=seen, prompt=prompt)
    return ResponseTurn(turn, history, continued.instructions, parsed.model, parsed.store, parsed.conversation)


class ResponseSaver:
    """Stores one response's envelope and the history a chained request continues from (and
    advances its conversation), when `store` is on."""

    def __init__(self, ctx: ResponsesContext, response_id: str, prepared: ResponseTurn) -> None:
        self.ctx, self.response_id, self.prepared = ctx, response_id, prepared

    async def _put(self, envelope: dict[str, Any], history: list[dict[str, Any]]) -> None:
        prepared = self.prepared
        if not prepared.store:
            return
        try:
            await self.ctx.response_store.put(self.response_id, {
                "response": envelope, "conversation_history": history,
                "instructions": prepared.instructions, "session_id": prepared.turn.session_id,
            })
            if prepared.conversation:
                await self.ctx.response_store.set_conversation(prepared.conversation, self.response_id)
        except Exception as exc:  # noqa: BLE001 - the answer stands; only the chaining is lost
            log.warning("response %s could not be stored (%s)", self.response_id, type(exc).__name__)

    def _asked(self) -> list[dict[str, Any]]:
        """The history and the turn's user message, as the request gave them."""
        return [*self.prepared.history, {"role": "user", "content": self.prepared.turn.user_message}]

    async def created(self, envelope: dict[str, Any]) -> None:
        """A streamed response as it starts, before its turn has answered."""
        await self._put(envelope, self._asked())

    async def completed(self, envelope: dict[str, Any], turn_messages: list[dict[str, Any]]) -> None:
        """A finished turn: the history before the model's merge, as the release continues it."""
        prepared = self.prepared
        await self._put(envelope, self.ctx.behaviour.history_after_turn(prepared.history, prepared.turn.user_message,
                                                                       turn_messages))

    async def failed(self, envelope: dict[str, Any], reply: str) -> None:
        """A failed streamed turn, continued from with `reply` (its text so far, else the error) as
        the assistant's."""
        await self._put(envelope, [*self._asked(), {"role": "assistant", "content": reply}])


async def respond(ctx: ResponsesContext, prepared: ResponseTurn, idempotency: Idempotency | None) -> dict[str, Any]:
    """Run the turn for a client that waits (a replay of `idempotency` gets the first request's
    turn), store its response, and return the response object."""
    outcome = await answer(ctx, prepared.turn, CompletionFailed, idempotency)
    final = outcome.final_text or NO_RESPONSE
    response_id = f"resp_{ctx.ids.hex(28)}"
    data = {
        "id": response_id, "object": "response", "status": "completed", "created_at": int(ctx.clock.now()),
        "model": prepared.model, "output": output_items(outcome.messages, final), "usage": outcome.usage.public(),
    }
    await ResponseSaver(ctx, response_id, prepared).completed(data, outcome.messages)
    return data


async def start_stream(ctx: ResponsesContext, prepared: ResponseTurn, sink: EventSink, admission: Admission) -> None:
    """Store the response as `response.created` shows it, then start the stream and its turn (the
    admission ends as the turn gets its task): its events go to `sink` as they happen."""
    response_id = f"resp_{ctx.ids.hex(28)}"
    save = ResponseSaver(ctx, response_id, prepared)
    stream = ResponseStream(ctx, sink, response_id, prepared.model, int(ctx.clock.now()), save,
                            upstream_events=ctx.behaviour.upstream_response_events)
    await save.created(stream.created())
    admission.release()
    TurnStream.start(ctx, prepared.turn, stream)
