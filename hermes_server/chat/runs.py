"""Structured runs (`/v1/runs`): one agent turn in the background, its status and its event queue.

As upstream keeps them, in memory only:

- the **status** of every run, a dict whose keys keep the order they were first set
  in (`object, run_id, status, updated_at, created_at, session_id, model`, then
  `last_event`, `output`, `usage`, `error` as they first appear); a finished run's
  status is readable for an hour after its last update;
- one **event queue** per run, created at submit and unbounded, so the first
  subscriber gets every event however late it comes; it is shared, not broadcast
  (two subscribers split the events), and dropped as soon as a subscriber's stream
  ends, however it ends: later events are discarded and a later subscriber is told
  the run is unknown. A queue nobody subscribed to is dropped 5 minutes after submit;
- the **live** part (task, stop request, approvals, steer text) until the turn ends.
  Stop, approval and (0.20+) steer answer only while it exists; the run counts against
  the cap until then;
- (0.21) for a run submitted with an `Idempotency-Key`, its status in `runs_idempotency.db`
  too (`store/runs_idempotency.py`), updated as upstream's `_set_run_status` does, so a
  replay and `GET /v1/runs/{id}` find it after a restart; one whose owner process is
  gone reads `interrupted` (`hydrate`).

A 0.20+ session stream (`/api/sessions/{id}/chat/stream`) registers its run here too, without
an event queue, so status, stop and steer reach it by its `run_id`.

The turn itself is an ordinary chat turn (`chat/turn.py`) on the run's session with
the history the request gave (never state.db's), run in a task the server owns.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from hermes_server.agents.base import AgentEvent, Delta, Progress, ToolEvent
from hermes_server.chat.interrupt import Stop, TurnStopped
from hermes_server.chat.stream import Encoder
from hermes_server.chat.turn import ChatTurn, TurnContext, run_turn
from hermes_server.domain.content import normalize_content
from hermes_server.domain.redact import redact
from hermes_server.domain.run_input import stored_user_message
from hermes_server.domain.run_keys import SETTLED, interrupted
from hermes_server.store.runs_idempotency import NO_RUN_KEYS, RunKeys

log = logging.getLogger("hermes_server.chat")

STATUS_TTL = 3600.0
UNSUBSCRIBED_STREAM_TTL = 300.0
# Expired runs are looked for at most this often (upstream sweeps once a minute).
SWEEP_INTERVAL = 60.0
# How long an unanswered approval waits before it counts as a deny (upstream's default).
APPROVAL_TIMEOUT = 60.0
TERMINAL = ("completed", "failed", "cancelled")
# A kept run's status is written again when one of these fields is set (or its status changes).
_KEPT_FIELDS = frozenset({"output", "error", "usage", "pending_steer", "session_id"})


def approval_choices(smart_denied: bool, allow_permanent: bool) -> list[str]:
    """The choices an `approval.request` offers."""
    if smart_denied:
        return ["once", "deny"]
    return ["once", "session", "always", "deny"] if allow_permanent else ["once", "session", "deny"]


class RunApprovals:
    """The approval gate of one run: the agent asks and waits, the client answers over HTTP."""

    def __init__(self, runs: Runs, run_id: str) -> None:
        self.runs = runs
        self.run_id = run_id
        self.pending: deque[asyncio.Future[str]] = deque()

    async def ask(self, request: dict[str, Any]) -> str:
        event = dict(request)
        event.update({
            "event": "approval.request", "run_id": self.run_id, "timestamp": self.runs.now(),
            "choices": approval_choices(bool(event.get("smart_denied")), event.get("allow_permanent") is not False),
        })
        self.runs.set_status(self.run_id, "waiting_for_approval", last_event="approval.request")
        self.runs.enqueue(self.run_id, event)
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.pending.append(answer)
        try:
            return await asyncio.wait_for(asyncio.shield(answer), APPROVAL_TIMEOUT)
        except TimeoutError:
            return "deny"
        finally:
            if answer in self.pending:
                self.pending.remove(answer)

    def resolve(self, choice: str, every: bool) -> int:
        """Answer the oldest pending request (all of them with `every`); how many were answered."""
        count = 0
        while self.pending and (every or count == 0):
            answer = self.pending.popleft()
            if not answer.done():
                answer.set_result(choice)
                count += 1
        return count


@dataclass
class LiveRun:
    """What exists of a run while its turn is running."""

    stop: Stop
    approvals: RunApprovals
    task: asyncio.Task[Any] | None = None
    tool_started: dict[str, float] = field(default_factory=dict)
    # Steer text not yet delivered to the agent, newline-joined as upstream's agent keeps it.
    # The echo and script agents have no step boundary after their model call begins, so a
    # steer is never delivered mid-turn here: it rides on `run.completed` (docs/differences.md).
    pending_steer: str | None = None


class Runs:
    """Every run of one server: statuses, event queues, live turns."""

    def __init__(self, clock: Any, keys: RunKeys = NO_RUN_KEYS) -> None:
        self.clock = clock
        # Where Idempotency-Key records are kept (runs_idempotency.db from 0.21; else nowhere),
        # and the runs whose status a record keeps.
        self.keys = keys
        self.kept: set[str] = set()
        self.statuses: dict[str, dict[str, Any]] = {}
        self.streams: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
        self.stream_created: dict[str, float] = {}
        self.subscribed: set[str] = set()
        self.live: dict[str, LiveRun] = {}
        # When the last sweep ran; None: never (the first registration sweeps, finding nothing).
        # Not read at construction: a deterministic clock's first reading belongs to the first request.
        self.swept_at: float | None = None

    def now(self) -> float:
        return self.clock.now()

    def set_status(self, run_id: str, status: str, **fields: Any) -> dict[str, Any]:
        """Update a status as upstream does: the fixed keys, `created_at` once, then `fields`."""
        now = self.now()
        current = self.statuses.get(run_id, {})
        changed = current.get("status") != status or status in SETTLED or not _KEPT_FIELDS.isdisjoint(fields)
        current.update({"object": "hermes.run", "run_id": run_id, "status": status, "updated_at": now})
        current.setdefault("created_at", fields.pop("created_at", now))
        current.update(fields)
        self.statuses[run_id] = current
        if run_id in self.kept and changed:
            self.keys.update_status(run_id, dict(current), now)
        return current

    def enqueue(self, run_id: str, event: dict[str, Any] | None) -> None:
        """Queue an event (None: the end) while the run's queue exists; else it is discarded."""
        queue = self.streams.get(run_id)
        if queue is not None:
            queue.put_nowait(event)

    def push(self, run_id: str, event: dict[str, Any]) -> None:
        """A tool or reasoning event: it becomes the status's `last_event`, then is queued."""
        status = self.statuses.get(run_id, {}).get("status", "running")
        self.set_status(run_id, status, last_event=event["event"])
        self.enqueue(run_id, event)

    def sweep(self) -> None:
        """Forget finished statuses after an hour and queues nobody subscribed to after 5 minutes
        (looked for once a minute, so a busy server does not scan every run on every request)."""
        now = self.now()
        if self.swept_at is not None and 0 <= now - self.swept_at < SWEEP_INTERVAL:  # (set back: sweeps)
            return
        self.swept_at = now
        for run_id, created in list(self.stream_created.items()):
            if now - created > UNSUBSCRIBED_STREAM_TTL and run_id not in self.subscribed:
                self.drop_stream(run_id)
        for run_id, status in list(self.statuses.items()):
            if status.get("status") in TERMINAL and now - status.get("updated_at", now) > STATUS_TTL:
                del self.statuses[run_id]
                self.kept.discard(run_id)  # its record, if any, still answers (`hydrate`)

    def drop_stream(self, run_id: str) -> None:
        self.streams.pop(run_id, None)
        self.stream_created.pop(run_id, None)

    def register(self, run_id: str, session_id: Any, model: Any, *, queued: bool = True) -> LiveRun:
        """A new run: its status (and, for a `/v1/runs` run, its event queue) exist before the client
        hears of it. A session stream's run has no queue (its events go to its own response) and
        is running from the start."""
        self.sweep()
        now = self.now()
        if queued:
            self.streams[run_id] = asyncio.Queue()
            self.stream_created[run_id] = now
        self.set_status(run_id, "queued" if queued else "running", created_at=now, session_id=session_id,
                        model=model)
        live = LiveRun(Stop(), RunApprovals(self, run_id))
        self.live[run_id] = live
        return live

    def forget(self, run_id: str) -> None:
        """Undo `register` for a run that never started (its key was taken meanwhile)."""
        self.statuses.pop(run_id, None)
        self.live.pop(run_id, None)
        self.kept.discard(run_id)
        self.drop_stream(run_id)

    async def hydrate(self, scope: str, run_id: str) -> dict[str, Any] | None:
        """The status of a run, from memory, else (0.21) from its record in runs_idempotency.db,
        as upstream's `_durable_run_status`: an unsettled run whose owner process is gone reads
        `interrupted` from then on. A settled status is remembered; one another live process owns
        is read again each time (docs/differences.md)."""
        status = self.statuses.get(run_id)
        if status is not None:
            return status
        record = await self.keys.status_for_run(scope, run_id)
        if record is None:
            return None
        status = dict(record.status)
        if status.get("status") not in SETTLED:
            if record.owner.alive():
                return status
            now = self.now()
            status = interrupted(status, now)
            self.keys.update_status(run_id, dict(status), now)
        self.statuses[run_id] = status
        self.kept.add(run_id)
        return status

    def request_stop(self, run_id: str) -> bool:
        """Stop a live run (a pending approval is answered deny); False when it is not live."""
        live = self.live.get(run_id)
        if live is None:
            return False
        self.set_status(run_id, "stopping", last_event="run.stopping")
        live.stop.set(approval_denied=live.approvals.resolve("deny", every=True) > 0)
        return True

    def accepting_steer(self, run_id: str) -> bool:
        """Only a live run whose status is `running` takes steer text (not while it waits for an
        approval, nor once it is stopping)."""
        return run_id in self.live and self.statuses.get(run_id, {}).get("status") == "running"

    def steer(self, run_id: str, text: str) -> bool:
        """Give a running run's agent steer text, and queue `run.steered`; False when it is not
        accepting steer or the text is blank (as upstream's agent refuses it)."""
        live = self.live.get(run_id)
        cleaned = text.strip()
        if live is None or not cleaned or not self.accepting_steer(run_id):
            return False
        live.pending_steer = f"{live.pending_steer}\n{cleaned}" if live.pending_steer else cleaned
        self.set_status(run_id, "running", last_event="run.steered")
        self.enqueue(run_id, {"event": "run.steered", "run_id": run_id, "timestamp": self.now(), "accepted": True})
        return True

    def respond(self, run_id: str, choice: str, every: bool) -> int | None:
        """Answer a run's pending approval; None when the run has no live approval session."""
        live = self.live.get(run_id)
        if live is None:
            return None
        resolved = live.approvals.resolve(choice, every)
        if resolved:
            self.set_status(run_id, "running", last_event="approval.responded")
            self.enqueue(run_id, {"event": "approval.responded", "run_id": run_id, "timestamp": self.now(),
                                  "choice": choice, "resolved": resolved})
        return resolved

    def stop_all(self) -> None:
        """Stop every live run (a test-control reset)."""
        for run_id in list(self.live):
            self.request_stop(run_id)

    async def reset(self) -> None:
        """Forget every run (a registered part of the server's state; a fixture reset stops
        live runs and waits for their turns first)."""
        self.statuses.clear()
        self.kept.clear()
        self.streams.clear()
        self.stream_created.clear()
        self.subscribed.clear()
        self.swept_at = None

    def active_count(self) -> int:
        """Runs queued, running or waiting for an approval (as /health/detailed counts them)."""
        return sum(s.get("status") in ("queued", "running", "waiting_for_approval") for s in self.statuses.values())


class StreamRun:
    """The run a session chat stream's turn is, as that stream reports to it. This base is
    0.19.0's: the stream's `run_id` names no run, so there is nothing to stop and nothing to record."""

    stop: Stop | None = None

    @property
    def pending_steer(self) -> str | None:
        """Steer text the agent never took (always none without a run to steer)."""
        return None

    def attach(self, task: asyncio.Task[Any]) -> None:
        """The task running the turn."""

    def completed(self, usage: dict[str, Any], steer: dict[str, Any]) -> None:
        """The turn answered (`steer`: its `pending_steer`, when the agent never took it)."""

    def failed(self, error: str) -> None:
        """The turn failed with the (redacted) `error` its stream reported."""

    def cancelled(self) -> None:
        """A stop ended the turn."""

    def ended(self) -> None:
        """The turn is over, however it ended."""


class TrackedStreamRun(StreamRun):
    """A session stream's run registered in `runs` (0.20+): `GET /v1/runs/{id}` reads its status, stop
    and steer reach its turn."""

    def __init__(self, runs: Runs, run_id: str, live: LiveRun) -> None:
        self.runs, self.run_id, self.live = runs, run_id, live
        self.stop = live.stop

    @property
    def pending_steer(self) -> str | None:
        return self.live.pending_steer

    def attach(self, task: asyncio.Task[Any]) -> None:
        self.live.task = task

    def completed(self, usage: dict[str, Any], steer: dict[str, Any]) -> None:
        self.runs.set_status(self.run_id, "completed", usage=usage, last_event="run.completed", **steer)

    def failed(self, error: str) -> None:
        self.runs.set_status(self.run_id, "failed", error=error, last_event="run.failed")

    def cancelled(self) -> None:
        self.runs.set_status(self.run_id, "cancelled", last_event="run.cancelled")

    def ended(self) -> None:
        self.runs.live.pop(self.run_id, None)


@dataclass(frozen=True)
class StreamRuns:
    """What a release makes of a session chat stream's `run_id`: nothing (0.19.0, `tracked` false),
    or a run of its own (`TrackedStreamRun`)."""

    tracked: bool = False

    def start(self, runs: Runs, run_id: str, session_id: str, model: Any) -> StreamRun:
        """The stream's run, registered (running, without an event queue) when the release tracks it."""
        if not self.tracked:
            return StreamRun()
        return TrackedStreamRun(runs, run_id, runs.register(run_id, session_id, model, queued=False))


UNTRACKED_STREAMS = StreamRuns()


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
        raise TypeError(f"str expected, not {type(spec.session_id).__name__}")
    spec.session_id.encode("utf-8")  # a lone surrogate raises here, as it fails 0.19.0's store, before any write
    return ChatTurn(spec.session_id, stored_user_message(spec.user_message), spec.instructions or None,
                    spec.session_key, history=spec.history,
                    stop=live.stop, approvals=live.approvals, prompt=normalize_content(spec.prompt))


async def run_in_background(ctx: TurnContext, runs: Runs, spec: RunSpec, live: LiveRun) -> None:
    """The run's task: the turn, then exactly one terminal event and the end of the queue."""
    run_id = spec.run_id
    try:
        runs.set_status(run_id, "running")
        if live.stop.is_set():  # stopped before its turn began: nothing is written
            raise TurnStopped()
        outcome = await run_turn(ctx, _turn(spec, live), RunEncoder(runs, run_id, live).event)
    except (TurnStopped, asyncio.CancelledError) as exc:
        # Stopped, or cancelled by a shutdown that no longer waits (upstream's `_finish("cancelled")`).
        runs.enqueue(run_id, {"event": "run.cancelled", "run_id": run_id, "timestamp": runs.now()})
        runs.set_status(run_id, "cancelled", last_event="run.cancelled")
        if isinstance(exc, asyncio.CancelledError):
            raise
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, never raised
        log.warning("run %s failed (%s)", run_id, type(exc).__name__)
        error = redact(str(exc))
        runs.set_status(run_id, "failed", error=error, last_event="run.failed")
        runs.enqueue(run_id, {"event": "run.failed", "run_id": run_id, "timestamp": runs.now(), "error": error})
    else:
        if live.stop.is_set():  # finished anyway after a stop: the stop wins, the output is not kept
            runs.enqueue(run_id, {"event": "run.cancelled", "run_id": run_id, "timestamp": runs.now()})
            runs.set_status(run_id, "cancelled", last_event="run.cancelled")
        else:
            usage = outcome.usage.public()
            # Steer text the agent never took rides on the terminal event and status (0.20+).
            extra = {"pending_steer": live.pending_steer} if live.pending_steer else {}
            runs.enqueue(run_id, {"event": "run.completed", "run_id": run_id, "timestamp": runs.now(),
                                  "output": outcome.final_text, "usage": usage, **extra})
            runs.set_status(run_id, "completed", output=outcome.final_text, usage=usage,
                            last_event="run.completed", **extra)
    finally:
        runs.enqueue(run_id, None)
        runs.live.pop(run_id, None)
