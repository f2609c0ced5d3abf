"""`--agent-delay`: every agent holds each turn that long, after the user row is stored."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI
from tests.support.server import start_server, start_with_script

pytestmark = [pytest.mark.in_process, pytest.mark.slow]

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


def test_openai_agent_is_held_before_the_backend_is_asked(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        server = start_server(tmp_path / "home", "--agent", "openai", "--agent-base-url", fake.base_url + "/",
                              "--agent-delay", str(DELAY))
        try:
            assert _chat(server, "remote") >= DELAY
            assert len(fake.requests) == 1
        finally:
            server.stop()


def test_a_stop_ends_the_hold(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--agent-delay", "30")
    try:
        run_id = server.client.post("/v1/runs", json={"input": "held"}).json()["run_id"]
        time.sleep(0.3)
        began = time.monotonic()
        server.client.post(f"/v1/runs/{run_id}/stop")
        while server.client.get(f"/v1/runs/{run_id}").json()["status"] != "cancelled":
            assert time.monotonic() - began < 3
            time.sleep(0.02)
        rows = server.client.get(f"/api/sessions/{run_id}/messages").json()["data"]
        assert [r["role"] for r in rows] == ["user"]
    finally:
        server.stop()


def test_deterministic_stream_and_completion_ids_repeat(tmp_path: Path) -> None:
    seen = []
    for name in ("a", "b"):
        server = start_server(tmp_path / name, "--deterministic")
        try:
            server.client.post("/api/sessions", json={"id": "d"}).raise_for_status()
            stream = server.client.post("/api/sessions/d/chat/stream", json={"message": "x"}).text
            completion = server.client.post("/v1/chat/completions",
                                            json={"messages": [{"role": "user", "content": "x"}]}).json()["id"]
            seen.append((re.findall(r"(?:run|msg)_[0-9a-f]{32}", stream)[:2], completion))
        finally:
            server.stop()
    assert seen[0] == seen[1] and len(seen[0][0]) == 2


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
