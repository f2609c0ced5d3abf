"""0.21.6's shutdown of live runs (https://github.com/NousResearch/hermes-agent/pull/114774), on the run
task itself: `Runs.interrupt_for_shutdown` settles every live `/v1/runs` run `interrupted` before its
turn is interrupted, and nothing the turn does afterwards changes that. The real server's SIGTERM is in
tests/api/test_shutdown_runs.py."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from hermes_server.chat import run_task
from hermes_server.chat.interrupt import TurnStopped
from hermes_server.chat.run_task import RunSpec, run_in_background
from hermes_server.chat.runs import Runs
from hermes_server.domain.run_keys import SHUTDOWN_ERROR


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        self.t += 1
        return self.t


class _Keys:
    """A run-key store that only records the statuses written to it."""

    def __init__(self) -> None:
        self.written: list[dict[str, Any]] = []

    def update_status(self, run_id: str, status: dict[str, Any], now: float) -> None:
        self.written.append(status)


class _Usage:
    @staticmethod
    def public() -> dict[str, int]:
        return {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}


class _Outcome:
    final_text = "the reply"
    usage = _Usage()


def _sync(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test in a loop of its own (the suite has no async plugin)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def _spec(run_id: str) -> RunSpec:
    return RunSpec(run_id, "sess", {"role": "user", "content": "hi"}, [], None, None, "hi")


class _Turn:
    """A fake turn: it starts, waits until released or stopped, then ends as `ending` says."""

    def __init__(self, ending: str) -> None:
        self.ending = ending
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.calls = 0

    async def __call__(self, ctx: Any, turn: Any, events: Any) -> Any:
        self.calls += 1
        self.started.set()
        stop = asyncio.ensure_future(turn.stop.requested.wait())
        release = asyncio.ensure_future(self.release.wait())
        await asyncio.wait([stop, release], return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        release.cancel()
        if self.ending == "success":
            return _Outcome()
        if self.ending == "failure":
            raise RuntimeError("boom")
        if self.ending == "cancelled":
            raise asyncio.CancelledError()
        raise TurnStopped()


def _setup(monkeypatch: pytest.MonkeyPatch, ending: str) -> tuple[Runs, _Keys, _Turn]:
    keys = _Keys()
    runs = Runs(_Clock(), keys)  # type: ignore[arg-type]
    turn = _Turn(ending)
    monkeypatch.setattr(run_task, "run_turn", turn)
    return runs, keys, turn


async def _events(runs: Runs, run_id: str) -> list[dict[str, Any]]:
    queue, out = runs.streams[run_id], []
    while (event := queue.get_nowait() if not queue.empty() else None) is not None:
        out.append(event)
    return out


def _start(runs: Runs, run_id: str) -> asyncio.Task[None]:
    live = runs.register(run_id, "sess", "m")
    runs.kept.add(run_id)
    live.task = asyncio.get_running_loop().create_task(run_in_background(None, runs, _spec(run_id), live))  # type: ignore[arg-type]
    return live.task


async def _claimed_mid_turn(monkeypatch: pytest.MonkeyPatch, ending: str,
                            run_id: str) -> tuple[Runs, _Keys, _Turn, asyncio.Task[None]]:
    """A run whose turn (ending as `ending` says) has begun when the shutdown claims it."""
    runs, keys, turn = _setup(monkeypatch, ending)
    task = _start(runs, run_id)
    await turn.started.wait()
    runs.interrupt_for_shutdown()
    return runs, keys, turn, task


def _is_shutdown_interrupted(status: dict[str, Any]) -> None:
    assert status["status"] == "interrupted"
    assert status["error"] == SHUTDOWN_ERROR == "Gateway shutdown interrupted the run."
    assert status["last_event"] == "run.interrupted"
    assert "output" not in status


@pytest.mark.parametrize("ending", ["success", "failure", "stopped"])
@_sync
async def test_a_late_result_cannot_overwrite_the_shutdown(monkeypatch: pytest.MonkeyPatch, ending: str) -> None:
    runs, keys, turn, task = await _claimed_mid_turn(monkeypatch, ending, "run_a")
    _is_shutdown_interrupted(runs.statuses["run_a"])  # at once, before the turn has ended
    _is_shutdown_interrupted(keys.written[-1])  # and in its record
    turn.release.set()
    await task
    _is_shutdown_interrupted(runs.statuses["run_a"])
    _is_shutdown_interrupted(keys.written[-1])
    events = await _events(runs, "run_a")
    assert [e["event"] for e in events] == ["run.interrupted"]
    assert events[0]["error"] == SHUTDOWN_ERROR
    assert "run_a" not in runs.live and not runs.shutdown_claimed


@_sync
async def test_a_cancelled_turn_stays_interrupted(monkeypatch: pytest.MonkeyPatch) -> None:
    runs, keys, _turn, task = await _claimed_mid_turn(monkeypatch, "cancelled", "run_c")
    with pytest.raises(asyncio.CancelledError):
        await task
    _is_shutdown_interrupted(runs.statuses["run_c"])
    _is_shutdown_interrupted(keys.written[-1])


@_sync
async def test_a_run_admitted_but_not_started_settles_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    runs, keys, turn = _setup(monkeypatch, "success")
    task = _start(runs, "run_q")  # created, not yet run
    assert runs.statuses["run_q"]["status"] == "queued"
    runs.interrupt_for_shutdown()
    _is_shutdown_interrupted(runs.statuses["run_q"])
    await task
    assert turn.calls == 0  # its turn never starts
    _is_shutdown_interrupted(runs.statuses["run_q"])
    _is_shutdown_interrupted(keys.written[-1])
    assert [e["event"] for e in await _events(runs, "run_q")] == ["run.interrupted"]


@_sync
async def test_a_client_stop_still_goes_stopping_then_cancelled(monkeypatch: pytest.MonkeyPatch) -> None:
    runs, _keys, turn = _setup(monkeypatch, "stopped")
    task = _start(runs, "run_s")
    await turn.started.wait()
    assert runs.request_stop("run_s")
    assert runs.statuses["run_s"]["status"] == "stopping"
    await task
    status = runs.statuses["run_s"]
    assert (status["status"], status["last_event"], "error" in status) == ("cancelled", "run.cancelled", False)


@_sync
async def test_a_stop_after_the_shutdown_claimed_the_run_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    runs, _keys, _turn, task = await _claimed_mid_turn(monkeypatch, "stopped", "run_x")
    assert not runs.request_stop("run_x")
    runs.interrupt_for_shutdown()  # a second call changes nothing
    await task
    _is_shutdown_interrupted(runs.statuses["run_x"])
    assert [e["event"] for e in await _events(runs, "run_x")] == ["run.interrupted"]


@_sync
async def test_a_session_streams_run_is_left_to_its_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    runs, _keys, _turn = _setup(monkeypatch, "success")
    runs.register("run_stream", "sess", "m", queued=False)
    runs.interrupt_for_shutdown()
    assert runs.statuses["run_stream"]["status"] == "running"
    assert not runs.shutdown_claimed
