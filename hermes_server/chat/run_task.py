"""The task of one structured run (`POST /v1/runs`): its turn, then exactly one terminal event.

The turn is an ordinary chat turn (chat/turn.py) on the run's session with the history the
request gave (never state.db's); its events become the run's (`message.delta`, tool and
reasoning events), and its end the run's status (chat/runs.py keeps both).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from hermes_server.agents.base import AgentEvent, Delta, Progress, ToolEvent
from hermes_server.chat import failures
from hermes_server.chat.interrupt import TurnStopped
from hermes_server.chat.runs import LiveRun, Runs
from hermes_server.chat.stream import Encoder
from hermes_server.chat.turn import ChatTurn, TurnContext, run_turn
from hermes_server.domain.content import normalize_content
from hermes_server.domain.errors import UpstreamCrash
from hermes_server.domain.run_input import stored_user_message
from hermes_server.domain.run_keys import SHUTDOWN_ERROR

log = logging.getLogger("hermes_server.chat")


@dataclass(frozen=True)
class RunSpec:
    """What a validated submit hands to the run task."""

    run_id: str
    session_id: Any
    user_message: Any
    history: list[dict[str, Any]]
    instructions: Any
    session_key: str | None
    prompt: Any  # the user message as the model is given it (see `ChatTurn.prompt`)


class RunEncoder(Encoder):
    """A run's agent events as run events, with upstream's keys, on the run's queue; a tool or
    reasoning event also becomes the status's `last_event`. The run's terminal events are its
    driver's (`run_in_background`), since they settle its status too."""

    def __init__(self, runs: Runs, run_id: str, live: LiveRun) -> None:
        self.runs = runs
        self.run_id = run_id
        self.live = live
        self.now = 0.0

    def event(self, event: AgentEvent) -> None:
        # Every agent event is timed once, shown or not (a deterministic clock counts the readings).
        self.now = self.runs.now()
        super().event(event)

    def delta(self, event: Delta) -> None:
        if event.text:
            self.runs.enqueue(self.run_id, {"event": "message.delta", "run_id": self.run_id, "timestamp": self.now,
                                            "delta": event.text})

    def progress(self, event: Progress) -> None:
        self.runs.push(self.run_id, {"event": "reasoning.available", "run_id": self.run_id, "timestamp": self.now,
                                     "text": event.text or ""})

    def tool(self, event: ToolEvent) -> None:
        runs, run_id, now = self.runs, self.run_id, self.now
        key = event.call_id or event.tool_name or ""
        if event.kind == "started":
            self.live.tool_started[key] = now
            runs.push(run_id, {"event": "tool.started", "run_id": run_id, "timestamp": now,
                               "tool": event.tool_name, "preview": event.preview})
        else:
            began = self.live.tool_started.pop(key, now)
            runs.push(run_id, {"event": "tool.completed", "run_id": run_id, "timestamp": now,
                               "tool": event.tool_name, "duration": round(now - began, 3),
                               "error": event.kind == "failed"})


def _turn(spec: RunSpec, live: LiveRun) -> ChatTurn:
    """The chat turn of a run; a value upstream's agent cannot take fails the run, as there, in its words:
    a session id before anything is written, an instruction (`run_turn`) after the user row."""
    if not isinstance(spec.session_id, str):
        raise UpstreamCrash("TypeError", f"str expected, not {type(spec.session_id).__name__}")
    try:  # a lone surrogate fails 0.19.0's store here, before any write
        spec.session_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UpstreamCrash(type(exc).__name__, str(exc)) from None
    return ChatTurn(spec.session_id, stored_user_message(spec.user_message), spec.instructions or None,
                    spec.session_key, history=spec.history,
                    stop=live.stop, approvals=live.approvals, prompt=normalize_content(spec.prompt))


async def run_in_background(ctx: TurnContext, runs: Runs, spec: RunSpec, live: LiveRun) -> None:
    """The run's task: the turn, then exactly one terminal event and the end of the queue."""
    run_id = spec.run_id

    def finish(status: str, fields: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> None:
        """The run's one terminal write, its event and its status (upstream's `_finish`). A run a
        shutdown settled (0.21.6) stays `interrupted`, whatever its turn did meanwhile."""
        if run_id in runs.shutdown_claimed:
            status, fields, extra = "interrupted", {"error": SHUTDOWN_ERROR}, {}
        fields, extra = fields or {}, extra or {}
        # The status first (written through to a kept run's record), then the event that says so.
        event = {"event": f"run.{status}", "run_id": run_id, "timestamp": runs.now(), **fields, **extra}
        runs.set_status(run_id, status, **fields, last_event=f"run.{status}", **extra)
        runs.enqueue(run_id, event)

    try:
        if run_id in runs.shutdown_claimed:  # a shutdown came between its admission and now: no turn starts
            finish("interrupted")
            return
        runs.set_status(run_id, "running")
        if live.stop.is_set():  # stopped before its turn began: nothing is written
            raise TurnStopped()
        outcome = await run_turn(ctx, _turn(spec, live), RunEncoder(runs, run_id, live).event)
    except (TurnStopped, asyncio.CancelledError) as exc:
        # Stopped, or cancelled by a shutdown that no longer waits (upstream's `_finish("cancelled")`).
        finish("cancelled")
        if isinstance(exc, asyncio.CancelledError):
            raise
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, never raised
        log.warning("run %s failed (%s)", run_id, type(exc).__name__)
        finish("failed", {"error": failures.reported(exc)})
    else:
        if live.stop.is_set():  # finished anyway after a stop: the stop wins, the output is not kept
            finish("cancelled")
        else:
            # Steer text the agent never took rides on the terminal event and status (0.20+).
            extra = {"pending_steer": live.pending_steer} if live.pending_steer else {}
            finish("completed", {"output": outcome.final_text, "usage": outcome.usage.public()}, extra)
    finally:
        runs.enqueue(run_id, None)
        runs.live.pop(run_id, None)
        runs.shutdown_claimed.discard(run_id)
