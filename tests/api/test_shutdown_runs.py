"""Runs in flight when the server is stopped (SIGTERM), on real server processes restarted on the
same home: what their status says during and after the shutdown, in memory and in
runs_idempotency.db.

Under 0.21.2 a keyed run that outlives the turn drain is cancelled, as that release's
`_execute_run` settles a cancelled task (`run.cancelled`), and no internal error text reaches its
status, its record or the log.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

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
