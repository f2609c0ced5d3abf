"""Requests still running when shutdown's grace period ends: not errors, and the stop budget adds up."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import KEY, RunningServer, start_with_script

pytestmark = pytest.mark.slow


def _script(pause: float) -> dict[str, Any]:
    return {"turns": [{"steps": [{"delta": "first"}, {"sleep": pause}, {"delta": " last"}]}]}


def _cut(srv: RunningServer, path: str) -> dict[str, Any]:
    """POST `path` in the background, SIGTERM once its turn runs, and return what the client got."""
    assert srv.client.post("/api/sessions", json={"id": "s"}).status_code == 201
    result: dict[str, Any] = {}

    def run() -> None:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as client:
            result["response"] = client.post(path, json={"message": "hello"})

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 5
    while not srv.client.get("/health/detailed").json()["active_agents"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    srv.process.send_signal(signal.SIGTERM)
    thread.join(20)
    assert srv.process.wait(20) == 0
    return result


def _roles(srv: RunningServer) -> list[str]:
    with sqlite3.connect(srv.db_path) as conn:
        return [row[0] for row in conn.execute("SELECT role FROM messages WHERE session_id = 's' ORDER BY id")]


def _no_error_lines(log: str) -> None:
    assert "Traceback" not in log and "CancelledError" not in log
    assert not [line for line in log.splitlines() if " ERROR " in line], log


def test_a_plain_chat_cut_by_shutdown_gets_a_503_envelope_and_its_turn_is_stored(tmp_path: Path) -> None:
    srv = start_with_script(tmp_path / "h", _script(1.5), "--shutdown-grace", "0.3")
    response = _cut(srv, "/api/sessions/s/chat")["response"]
    assert response.status_code == 503 and response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == "server_shutting_down"
    _no_error_lines(srv.log())
    assert "POST /api/sessions/{session_id}/chat 503" in srv.log() and "session=s" in srv.log()
    assert _roles(srv) == ["user", "assistant"]


def test_a_stream_cut_by_shutdown_logs_no_error(tmp_path: Path) -> None:
    srv = start_with_script(tmp_path / "h", _script(1.5), "--shutdown-grace", "0.3")
    response = _cut(srv, "/api/sessions/s/chat/stream")["response"]
    assert response.status_code == 200
    _no_error_lines(srv.log())
    assert "shutdown grace period over: ending 1 request(s) still running" in srv.log()
    assert _roles(srv) == ["user", "assistant"]


def test_a_stop_takes_at_most_the_grace_plus_the_turn_drain(tmp_path: Path) -> None:
    srv = start_with_script(tmp_path / "h", _script(30), "--shutdown-grace", "0.5", "--turn-drain", "1")
    started = time.monotonic()
    _cut(srv, "/api/sessions/s/chat")
    assert time.monotonic() - started < 0.5 + 1 + 3  # plus start-up of the request and closing
    assert "cancelled 1 chat turn(s) still running after 1s" in srv.log()
    _no_error_lines(srv.log())
