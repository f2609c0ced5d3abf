"""Logs an operator can read (and share), and a shutdown that loses nothing in flight."""

from __future__ import annotations

import json
import re
import signal
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import KEY, RunningServer, start_server, start_with_script
from tests.support.sse import events, parse_frames, stream_chat

pytestmark = pytest.mark.slow

SECRETS = {
    "title": "TITLE-MARKER-7f3a",
    "prompt": "PROMPT-MARKER-91c2",
    "message": "MESSAGE-MARKER-0d4e",
    "wrong_key": "WRONG-KEY-MARKER-5b8f",
    "path": "PATH-MARKER-66aa",
}


def stopped_gracefully(srv: RunningServer) -> bool:
    """Exited on our SIGTERM (uvicorn re-raises it after shutdown) once lifespan shutdown closed state.db."""
    return srv.stop() in (0, -signal.SIGTERM) and "Application shutdown complete." in srv.log()


def access_records(log: str) -> list[dict[str, Any]]:
    """The JSON access records of a `--log-format json` log."""
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [r for r in records if r["logger"] == "hermes_server.access"]


def pausing_script(pause: float) -> dict[str, Any]:
    """A script agent turn that streams one delta, pauses, then finishes."""
    return {"turns": [{"steps": [{"delta": "first"}, {"sleep": pause}, {"delta": " last"}]}]}


def test_one_json_access_line_per_request_without_content(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", "--log-format", "json")
    try:
        before = len(access_records(srv.log()))
        c = srv.client
        sent = [
            c.post("/api/sessions", json={"id": "ops", "title": SECRETS["title"], "system_prompt": SECRETS["prompt"]}),
            c.patch("/api/sessions/ops", json={"title": SECRETS["title"] + "-2"}),
            c.post("/api/sessions/ops/chat", json={"message": SECRETS["message"]}),
            c.get("/api/sessions/ops/messages"),
            c.get("/api/sessions", params={"source": SECRETS["path"]}),
            c.get("/api/sessions/line%0Abreak"),
            httpx.get(srv.url + "/api/sessions", headers={"Authorization": f"Bearer {SECRETS['wrong_key']}"}),
            c.get(f"/no/such/{SECRETS['path']}"),
            c.put("/api/sessions/ops"),
        ]
        assert [r.status_code for r in sent] == [201, 200, 200, 200, 200, 404, 401, 404, 405]
        assert SECRETS["message"] in sent[3].text  # the transcript really holds the text the log must not
        time.sleep(0.2)
        log = srv.log()
    finally:
        srv.stop()
    records = access_records(log)[before:]
    assert len(records) == len(sent)
    assert [(r["method"], r["route"], r["status"]) for r in records] == [
        ("POST", "/api/sessions", 201),
        ("PATCH", "/api/sessions/{session_id}", 200),
        ("POST", "/api/sessions/{session_id}/chat", 200),
        ("GET", "/api/sessions/{session_id}/messages", 200),
        ("GET", "/api/sessions", 200),
        ("GET", "/api/sessions/{session_id}", 404),
        ("GET", "/api/sessions", 401),
        ("GET", "-", 404),
        ("PUT", "/api/sessions/{session_id}", 405),
    ]
    assert [r["session_id"] for r in records] == ["ops", "ops", "ops", "ops", "-", "line\\x0abreak", "-", "-", "ops"]
    assert all(isinstance(r["duration_ms"], float) and r["duration_ms"] >= 0 for r in records)
    assert len({r["request_id"] for r in records}) == len(records)
    assert all(re.fullmatch(r"[0-9a-f]{16}", r["request_id"]) for r in records)
    for secret in [*SECRETS.values(), KEY, "ECHO-REPLY"]:
        assert secret not in log, secret


def test_text_access_line_and_one_error_report_per_failure(fresh_server: RunningServer) -> None:
    """An unhandled error (0.19.0's 500 on malformed model_config, spec Q5) is logged once, with the request id."""
    c = fresh_server.client
    assert c.post("/api/sessions", json={"id": "broken"}).status_code == 201
    with sqlite3.connect(fresh_server.db_path) as conn:
        conn.execute("UPDATE sessions SET model_config = '{not json' WHERE id = 'broken'")
    response = c.get("/api/sessions")
    assert (response.status_code, response.text) == (500, "500 Internal Server Error\n\nServer got itself in trouble")
    time.sleep(0.2)
    log = fresh_server.log()
    access = re.findall(r"INFO hermes_server\.access: GET /api/sessions 500 [0-9.]+ms session=- request=([0-9a-f]{16})$",
                        log, re.MULTILINE)
    assert len(access) == 1
    errors = re.findall(r" ERROR (\S+): (.*)$", log, re.MULTILINE)
    assert errors == [("hermes_server.errors", f"unhandled error in GET /api/sessions (request {access[0]})")]
    assert log.count("Traceback (most recent call last)") == 1


def test_in_flight_request_finishes_after_sigterm(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes")
    body = json.dumps({"id": "late", "title": "Sent during shutdown"}).encode()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(b"POST /api/sessions HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                     + f"Authorization: Bearer {KEY}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        time.sleep(0.3)
        srv.process.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert srv.process.poll() is None  # still waiting for our request
        sock.sendall(body[10:])
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 201 ")
    assert stopped_gracefully(srv)
    with sqlite3.connect(srv.db_path) as conn:
        assert conn.execute("SELECT title FROM sessions WHERE id = 'late'").fetchone() == ("Sent during shutdown",)
    with pytest.raises(httpx.ConnectError):
        httpx.get(srv.url + "/health", timeout=2)


def _stream_in_background(srv: RunningServer, session_id: str) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as client:
            result["response"], result["frames"] = stream_chat(client, session_id, {"message": "hello"})

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def _wait_for_turn(srv: RunningServer) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        detailed = srv.client.get("/health/detailed").json()
        if detailed["active_agents"]:
            return detailed
        time.sleep(0.05)
    raise AssertionError("the turn never showed as active")


def test_open_stream_finishes_within_the_grace_period(tmp_path: Path) -> None:
    srv = start_with_script(tmp_path / "hermes", pausing_script(1.5))
    assert srv.client.post("/api/sessions", json={"id": "s"}).status_code == 201
    thread, result = _stream_in_background(srv, "s")
    detailed = _wait_for_turn(srv)
    assert (detailed["active_agents"], detailed["gateway_busy"]) == (1, True)
    srv.process.send_signal(signal.SIGTERM)
    thread.join(10)
    assert stopped_gracefully(srv)
    names = [name for name, _ in events(result["frames"])]
    assert names[-3:] == ["assistant.completed", "run.completed", "done"]
    assert "Traceback" not in srv.log()


def test_stream_past_the_grace_period_is_closed_cleanly(tmp_path: Path) -> None:
    srv = start_with_script(tmp_path / "hermes", pausing_script(2.0), "--shutdown-grace", "0.5")
    assert srv.client.post("/api/sessions", json={"id": "s"}).status_code == 201
    thread, result = _stream_in_background(srv, "s")
    _wait_for_turn(srv)
    srv.process.send_signal(signal.SIGTERM)
    thread.join(10)
    # The body ended with chunked encoding's last chunk (httpx raised nothing) on a frame boundary.
    assert result["response"].status_code == 200
    names = [name for name, _ in events(result["frames"])]
    assert names[:3] == ["run.started", "message.started", "assistant.delta"] and "done" not in names
    assert stopped_gracefully(srv)
    log = srv.log()
    assert "Traceback" not in log and "returned without completing response" not in log
    # The turn itself still finished and was stored before the process exited.
    with sqlite3.connect(srv.db_path) as conn:
        roles = [row[0] for row in conn.execute("SELECT role FROM messages WHERE session_id = 's' ORDER BY id")]
    assert roles == ["user", "assistant"]
    assert parse_frames(b"".join(f.raw for f in result["frames"])) == result["frames"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_clean_start_and_stop_log_no_word_error_and_only_our_loggers(tmp_path: Path, fmt: str) -> None:
    """Start-up and shutdown lines once came under uvicorn's `uvicorn.error` logger, which trips a CI
    job that greps a log for "error" although nothing failed."""
    srv = start_server(tmp_path / "h", "--log-format", fmt)
    assert srv.client.get("/api/sessions").status_code == 200
    assert srv.stop() == 0
    log = srv.log()
    assert "startup complete" in log and "Shutting down" in log
    assert "error" not in log.lower(), log
    if fmt == "json":
        names = {json.loads(line)["logger"] for line in log.splitlines() if line.startswith("{")}
        assert names and all(name.startswith("hermes_server") for name in names), names
