"""`--agent-delay`: every agent holds each turn that long, after the user row is stored."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import start_server, start_with_script

DELAY = 0.6


def _chat(server, session_id: str) -> float:
    server.client.post("/api/sessions", json={"id": session_id}).raise_for_status()
    began = time.monotonic()
    response = server.client.post(f"/api/sessions/{session_id}/chat", json={"message": "hi"})
    assert response.status_code == 200, response.text
    return time.monotonic() - began


def test_echo_turns_are_held(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--agent-delay", str(DELAY))
    try:
        assert _chat(server, "held") >= DELAY
        began = time.monotonic()
        response = server.client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
        assert response.status_code == 200
        assert time.monotonic() - began >= DELAY
    finally:
        server.stop()


def test_user_row_is_stored_before_the_hold_ends(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--agent-delay", "1.5")
    try:
        server.client.post("/api/sessions", json={"id": "mid"}).raise_for_status()
        worker = threading.Thread(target=lambda: server.client.post("/api/sessions/mid/chat", json={"message": "q"}))
        worker.start()
        time.sleep(0.7)
        with sqlite3.connect(server.db_path) as conn:
            roles = [r[0] for r in conn.execute("SELECT role FROM messages WHERE session_id = 'mid' ORDER BY id")]
        worker.join()
        assert roles == ["user"]
    finally:
        server.stop()


def test_script_agent_and_environment_variable(tmp_path: Path) -> None:
    server = start_with_script(tmp_path / "home", {"turns": [{"reply": "scripted"}]},
                               env={"HERMES_SERVER_AGENT_DELAY": str(DELAY)})
    try:
        assert _chat(server, "scripted") >= DELAY
    finally:
        server.stop()


def test_default_is_no_hold(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home")
    try:
        assert _chat(server, "quick") < DELAY
    finally:
        server.stop()


@pytest.mark.parametrize("value", ["-1", "soon", "inf"])
def test_bad_values_are_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(RuntimeError, match="agent-delay"):
        start_server(tmp_path / "home", "--agent-delay", value, wait=10)
