"""Runs in flight when the server is stopped (SIGTERM), on real server processes restarted on the
same home: what their status says during and after the shutdown, in memory and in
runs_idempotency.db.

Under 0.21.2 a keyed run that outlives the turn drain is cancelled, as that release's
`_execute_run` settles a cancelled task (`run.cancelled`), and no internal error text reaches its
status, its record or the log.

Under 0.21.6 (https://github.com/NousResearch/hermes-agent/pull/114774) the shutdown settles it
`interrupted` with "Gateway shutdown interrupted the run." before interrupting its turn: its event
stream ends with `run.interrupted`, and its record says so after a restart.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.runs import wait_status
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.slow

HELD = ("--agent-delay", "60", "--shutdown-grace", "1", "--turn-drain", "1")
KEY = {"Idempotency-Key": "in-flight-1"}
# Text of Python's own that must never be a client's answer.
INTERNALS = ("aclose", "asynchronous generator", "RuntimeError", "Traceback", "CancelledError")


def _start(home: Path, version: str, *extra: str) -> RunningServer:
    return start_server(home, "--hermes-version", version, *extra, in_process=False)


def _record(home: Path) -> dict[str, object]:
    with sqlite3.connect(home / "runs_idempotency.db") as conn:
        (status_json,) = conn.execute("SELECT status_json FROM run_idempotency").fetchone()
    return dict(json.loads(status_json))


def _submit_held(server: RunningServer) -> str:
    answer = server.client.post("/v1/runs", json={"input": "a long one"}, headers=KEY)
    assert answer.status_code == 202
    run_id = str(answer.json()["run_id"])
    assert server.client.get(f"/v1/runs/{run_id}").json()["status"] == "running"
    return run_id


def test_0_21_2_cancels_a_held_run_at_shutdown_without_internal_error_text(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = _start(home, "0.21.2", *HELD)
    run_id = _submit_held(first)
    assert first.stop(signal.SIGTERM) == 0
    log = first.log()
    record = _record(home)
    assert (record["status"], record["last_event"]) == ("cancelled", "run.cancelled") and "error" not in record
    again = _start(home, "0.21.2")
    try:
        status = again.client.get(f"/v1/runs/{run_id}").json()
        assert status == record  # settled: read back as it was kept
    finally:
        again.stop()
    for text in INTERNALS:
        assert text not in log and text not in json.dumps(record), text


class _Subscriber(threading.Thread):
    """A client reading a run's event stream until the server ends it."""

    def __init__(self, server: RunningServer, run_id: str) -> None:
        super().__init__(daemon=True)
        self.server, self.run_id, self.raw = server, run_id, b""
        self.opened = threading.Event()

    def run(self) -> None:
        # A client of its own: stopping the server closes `server.client`.
        headers = {"Authorization": f"Bearer {self.server.key}"}
        with httpx.Client(base_url=self.server.url, headers=headers, timeout=30) as client, \
                client.stream("GET", f"/v1/runs/{self.run_id}/events") as response:
            self.opened.set()
            for chunk in response.iter_raw():
                self.raw += chunk

    def events(self) -> list[dict[str, Any]]:
        """Its `data:` frames (a run stream names the event in the data)."""
        return [json.loads(block[len(b"data: "):]) for block in self.raw.split(b"\n\n") if block.startswith(b"data: ")]


def test_0_21_6_settles_a_held_run_interrupted_at_shutdown(tmp_path: Path) -> None:
    """https://github.com/NousResearch/hermes-agent/pull/114774"""
    home = tmp_path / "home"
    first = _start(home, "0.21.6", *HELD)
    run_id = _submit_held(first)
    # A client's own stop is unchanged: stopping, then cancelled.
    stopped = first.client.post("/v1/runs", json={"input": "stop me"}).json()["run_id"]
    assert first.client.post(f"/v1/runs/{stopped}/stop").json() == {"run_id": stopped, "status": "stopping"}
    assert wait_status(first.client, stopped)["status"] == "cancelled"
    subscriber = _Subscriber(first, run_id)
    subscriber.start()
    assert subscriber.opened.wait(10)
    assert first.stop(signal.SIGTERM) == 0
    subscriber.join(10)
    log = first.log()
    last = subscriber.events()[-1]
    assert last["event"] == "run.interrupted", subscriber.raw
    assert last["error"] == "Gateway shutdown interrupted the run." and last["run_id"] == run_id
    record = _record(home)
    assert (record["status"], record["last_event"], record["error"]) == (
        "interrupted", "run.interrupted", "Gateway shutdown interrupted the run.")
    assert "output" not in record
    again = _start(home, "0.21.6")
    try:
        status = again.client.get(f"/v1/runs/{run_id}").json()
        assert status == record  # settled before the process ended: read back as it was kept
        replay = again.client.post("/v1/runs", json={"input": "a long one"}, headers=KEY)
        assert replay.json()["run_id"] == run_id and replay.json()["status"] == "interrupted"
    finally:
        again.stop()
    for text in INTERNALS:
        assert text not in log and text not in json.dumps(record), text
