"""0.21.2's runs across a restart, on real server processes (the same home, started twice).

Source: /work/shared/spec/hermes-after-0.19.md §1.4 "POST /v1/runs with durable Idempotency-Key"
("This holds after restarts and after terminal states; retention is 24 h") [R V4, V3], and
"GET /v1/runs/{id} (0.21, V3)": a non-terminal run whose owner process is gone reads
`interrupted` (V3 `_durable_run_status`) [B for the exact fields]; §4 item 8. Stop on it follows
V3 `_handle_stop_run`, whose settled statuses include `interrupted` (200 with the status).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.support.runs import RUN_SCRIPT, wait_status
from tests.support.server import RunningServer, start_with_script

# Each test starts a server process twice on one home.
pytestmark = pytest.mark.slow

KEY = {"Idempotency-Key": "restart-1"}


def _start(home: Path) -> RunningServer:
    return start_with_script(home, RUN_SCRIPT, "--hermes-version", "0.21.2", in_process=False)


def test_keys_survive_a_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = _start(home)
    try:
        run_id = first.client.post("/v1/runs", json={"input": "hello"}, headers=KEY).json()["run_id"]
        status = wait_status(first.client, run_id)
        assert status["status"] == "completed"
    finally:
        first.stop()
    again = _start(home)
    try:
        replay = again.client.post("/v1/runs", json={"input": "hello"}, headers=KEY)
        assert replay.status_code == 202 and replay.headers["idempotency-replayed"] == "true"
        assert replay.json() == {"run_id": run_id, "status": "completed", "replayed": True}
        assert again.client.get(f"/v1/runs/{run_id}").json() == status  # the status, as it was kept
        conflict = again.client.post("/v1/runs", json={"input": "other"}, headers=KEY)
        assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "idempotency_key_conflict"
        unkeyed = again.client.post("/v1/runs", json={"input": "hello"}).json()["run_id"]
        wait_status(again.client, unkeyed)
    finally:
        again.stop()
    last = _start(home)
    try:  # a run submitted without a key is not kept, as upstream keeps only keyed runs
        assert last.client.get(f"/v1/runs/{unkeyed}").status_code == 404
    finally:
        last.stop()


def test_a_run_a_restart_cut_off_reads_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = _start(home)
    # state.db first, so that the kill below cannot land inside its creation (a start-up matter of its own).
    assert first.client.post("/api/sessions", json={"id": "before"}).status_code == 201
    run_id = first.client.post("/v1/runs", json={"input": "slow one"}, headers=KEY).json()["run_id"]
    running = wait_status(first.client, run_id, ("running",))
    assert running["status"] == "running"
    first.stop(signal.SIGKILL)  # the owner process is gone with its turn unsettled
    again = _start(home)
    try:
        status = again.client.get(f"/v1/runs/{run_id}").json()
        assert status["status"] == "interrupted"
        assert status["error"] == "The gateway restarted before this run settled."
        assert status["last_event"] == "run.interrupted"
        assert status["run_id"] == run_id and status["created_at"] == running["created_at"]
        assert status["updated_at"] >= running["updated_at"]
        # As upstream reads it back: the file's JSON (sorted keys), then the fields the interrupt adds.
        assert list(status) == ["created_at", "model", "object", "run_id", "session_id", "status", "updated_at",
                                "error", "last_event"]
        stop = again.client.post(f"/v1/runs/{run_id}/stop")
        assert stop.status_code == 200 and stop.json() == status
        steer = again.client.post(f"/v1/runs/{run_id}/steer", json={"input": "go on"})
        assert steer.status_code == 409 and steer.json()["error"]["code"] == "run_not_accepting_steer"
        replay = again.client.post("/v1/runs", json={"input": "slow one"}, headers=KEY).json()
        assert replay == {"run_id": run_id, "status": "interrupted", "replayed": True}
        assert again.client.get(f"/v1/runs/{run_id}/events").status_code == 404  # its events went with it
    finally:
        again.stop()
    last = _start(home)
    try:  # `interrupted` was written back: it reads the same after another restart
        assert last.client.get(f"/v1/runs/{run_id}").json()["status"] == "interrupted"
    finally:
        last.stop()
