"""What a session chat stream's `run_id` is: nothing in 0.19.0, a run of its own from 0.20 on.

A 0.20+ session stream (`/api/sessions/{id}/chat/stream`) registers its run in `Runs`
(chat/runs.py) without an event queue, so `GET /v1/runs/{run_id}`, stop and steer reach it; its
status follows the stream's turn. The release's units choose which (`StreamRuns`), once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hermes_server.chat.interrupt import Stop
from hermes_server.chat.runs import LiveRun, Runs


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

    def completed(self, output: str | None, usage: dict[str, Any], steer: dict[str, Any]) -> None:
        """The turn answered `output` (`steer`: its `pending_steer`, when the agent never took it)."""

    def failed(self, error: str) -> None:
        """The turn failed with the (redacted) `error` its stream reported."""

    def cancelled(self) -> None:
        """A stop ended the turn."""

    def ended(self) -> None:
        """The turn is over, however it ended."""


class TrackedStreamRun(StreamRun):
    """A session stream's run registered in `runs` (0.20+): `GET /v1/runs/{id}` reads its status, stop
    and steer reach its turn. `keeps_output`: its `completed` status holds the reply as `output`, as a
    `/v1/runs` run's does (0.21.4 on), so a client that lost the stream can read it there."""

    def __init__(self, runs: Runs, run_id: str, live: LiveRun, keeps_output: bool) -> None:
        self.runs, self.run_id, self.live, self.keeps_output = runs, run_id, live, keeps_output
        self.stop = live.stop

    @property
    def pending_steer(self) -> str | None:
        return self.live.pending_steer

    def attach(self, task: asyncio.Task[Any]) -> None:
        self.live.task = task

    def completed(self, output: str | None, usage: dict[str, Any], steer: dict[str, Any]) -> None:
        kept = {"output": output} if self.keeps_output else {}
        self.runs.set_status(self.run_id, "completed", **kept, usage=usage, last_event="run.completed", **steer)

    def failed(self, error: str) -> None:
        self.runs.set_status(self.run_id, "failed", error=error, last_event="run.failed")

    def cancelled(self) -> None:
        self.runs.set_status(self.run_id, "cancelled", last_event="run.cancelled")

    def ended(self) -> None:
        self.runs.live.pop(self.run_id, None)


@dataclass(frozen=True)
class StreamRuns:
    """What a release makes of a session chat stream's `run_id`: nothing (0.19.0, `tracked` false),
    or a run of its own (`TrackedStreamRun`), whose completed status keeps the reply (`keeps_output`,
    0.21.4 on)."""

    tracked: bool = False
    keeps_output: bool = False

    def start(self, runs: Runs, run_id: str, session_id: str, model: Any) -> StreamRun:
        """The stream's run, registered (running, without an event queue) when the release tracks it."""
        if not self.tracked:
            return StreamRun()
        return TrackedStreamRun(runs, run_id, runs.register(run_id, session_id, model, queued=False),
                                self.keeps_output)


UNTRACKED_STREAMS = StreamRuns()
