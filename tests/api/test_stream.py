"""POST …/chat/stream (spec §4.9, vectors T98–T104) with the script agent, read off a real socket:
framing, event order and payload keys, errors, keepalive while the agent stalls, disconnect and
shutdown while a turn is running. Also D5 on the non-stream route."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import create_session as create
from tests.support.http import error
from tests.support.server import RunningServer, start_with_script
from tests.support.sse import Frame, events, parse_frames, stream_chat

KEEPALIVE = 0.4
SECRET = "sk-ant-api03-SECRETSECRETSECRETSECRET"
SCRIPT = {"turns": [
    {"match": "tools", "steps": [
        {"delta": "Hel"}, {"delta": ""}, {"delta": "lo"},
        {"reasoning": "pondering"},
        {"tool": "search", "args": {"q": "x"}, "preview": "search x", "result": "3 hits"},
        {"tool": "fetch", "args": {}, "preview": "fetch", "result": "timeout", "failed": True},
    ], "reply": "Hello", "usage": {"input_tokens": 30, "output_tokens": 2, "reasoning_tokens": 1}},
    {"match": "boom", "steps": [{"delta": "partial"}, {"fail": f"kaboom {SECRET}"}]},
    {"match": "stall", "steps": [{"delta": "wait"}, {"sleep": 1.3}, {"delta": " done"}]},
    {"match": "slow", "steps": [{"delta": "first"}, {"sleep": 1.0}, {"delta": " second"}]},
    {"match": "nothing", "reply": None},
    {"reply": "scripted default"},
]}
TAIL = ["session_id", "run_id", "seq", "ts"]
KEYS = {
    "run.started": ["user_message", *TAIL],
    "message.started": ["message", *TAIL],
    "assistant.delta": ["message_id", "delta", *TAIL],
    "tool.started": ["message_id", "tool_name", "preview", "args", *TAIL],
    "tool.completed": ["message_id", "tool_name", "preview", "args", *TAIL],
    "tool.failed": ["message_id", "tool_name", "preview", "args", *TAIL],
    "tool.progress": ["message_id", "tool_name", "delta", *TAIL],
    "assistant.completed": ["session_id", "message_id", "content", "completed", "partial", "interrupted",
                            "run_id", "seq", "ts"],
    "run.completed": ["session_id", "message_id", "completed", "messages", "usage", "run_id", "seq", "ts"],
    "error": ["message", *TAIL],
    "done": TAIL,
}


def start_scripted(home: Path) -> RunningServer:
    return start_with_script(home, SCRIPT, "--keepalive-seconds", str(KEEPALIVE))


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_scripted(tmp_path_factory.mktemp("scripted") / "hermes")
    yield srv
    srv.stop()


def get(server: RunningServer, sid: str) -> dict[str, Any]:
    return server.client.get(f"/api/sessions/{sid}").json()["session"]


def check_payloads(frames: list[Frame], path_id: str) -> None:
    """Upstream's key order, numbering, ids and JSON text (ensure_ascii=False, default separators)."""
    evs = events(frames)
    run_id = evs[0][1]["run_id"]
    assert re.fullmatch(r"run_[0-9a-f]{32}", run_id)
    assert [data["seq"] for _, data in evs] == list(range(1, len(evs) + 1))
    stamps = [data["ts"] for _, data in evs]
    assert stamps == sorted(stamps) and all(isinstance(ts, float) for ts in stamps)
    for frame in frames:
        if frame.name is None:
            continue
        assert list(frame.data) == KEYS[frame.name], frame.name
        assert frame.data["run_id"] == run_id
        if frame.name not in ("assistant.completed", "run.completed"):
            assert frame.data["session_id"] == path_id
        line = frame.raw.split(b"\n")[1]
        assert line == b"data: " + json.dumps(frame.data, ensure_ascii=False).encode("utf-8")


def test_stream_order_headers_and_payloads(scripted: RunningServer) -> None:  # T100
    create(scripted, "S")
    response, frames = stream_chat(scripted.client, "S", {"message": "tools héllo ☃"},
                                   headers={"X-Hermes-Session-Key": "mk"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert (response.headers["cache-control"], response.headers["x-accel-buffering"]) == ("no-cache", "no")
    assert (response.headers["x-hermes-session-id"], response.headers["x-hermes-session-key"]) == ("S", "mk")
    assert not {"content-security-policy", "x-frame-options", "connection"} & set(response.headers)
    check_payloads(frames, "S")
    evs = events(frames)
    assert [name for name, _ in evs] == [
        "run.started", "message.started", "assistant.delta", "assistant.delta", "tool.progress",
        "tool.started", "tool.completed", "tool.started", "tool.failed", "tool.progress", "assistant.completed",
        "run.completed", "done"]
    data = [d for _, d in evs]
    message_id = data[1]["message"]["id"]
    assert re.fullmatch(r"msg_[0-9a-f]{32}", message_id)
    assert data[0]["user_message"] == {"role": "user", "content": "tools héllo ☃"}
    assert data[1]["message"] == {"id": message_id, "role": "assistant"}
    assert [d["delta"] for d in data[2:4]] == ["Hel", "lo"]  # the empty delta is dropped
    # `_thinking` carries each model call's content (the text before the first tool, then the
    # final reply), never the model's reasoning ("pondering"), as upstream's agent reports it.
    assert (data[4]["tool_name"], data[4]["delta"]) == ("_thinking", "Hello")
    assert (data[9]["tool_name"], data[9]["delta"]) == ("_thinking", "Hello")
    assert (data[5]["tool_name"], data[5]["preview"], data[5]["args"]) == ("search", "search x", {"q": "x"})
    assert (data[6]["tool_name"], data[6]["preview"], data[6]["args"]) == ("search", None, None)
    assert data[8]["tool_name"] == "fetch"
    assert {d["message_id"] for d in data[2:12]} == {message_id}
    assert data[10] | {"run_id": 0, "seq": 0, "ts": 0} == {
        "session_id": "S", "message_id": message_id, "content": "Hello", "completed": True, "partial": False,
        "interrupted": False, "run_id": 0, "seq": 0, "ts": 0}
    assert data[11]["usage"] == {"input_tokens": 30, "output_tokens": 2, "total_tokens": 32}
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
    assert data[11]["messages"] == [
        {"role": "assistant", "content": None, "tool_calls": [call], "finish_reason": "tool_calls"},
        {"role": "tool", "content": "3 hits", "tool_call_id": "call_1", "tool_name": "search"},
        {"role": "assistant", "content": None, "tool_calls": [{**call, "id": "call_2", "function": {
            "name": "fetch", "arguments": "{}"}}], "finish_reason": "tool_calls"},
        {"role": "tool", "content": "timeout", "tool_call_id": "call_2", "tool_name": "fetch"},
        {"role": "assistant", "content": "Hello", "finish_reason": "stop", "reasoning": "pondering"},
    ]
    rows = scripted.client.get("/api/sessions/S/messages").json()["data"]
    assert [(m["role"], m["tool_name"]) for m in rows] == [
        ("user", None), ("assistant", None), ("tool", "search"), ("assistant", None), ("tool", "fetch"),
        ("assistant", None)]
    assert rows[0]["content"] == "tools héllo ☃"
    session = get(scripted, "S")
    assert (session["message_count"], session["tool_call_count"], session["api_call_count"],
            session["reasoning_tokens"]) == (6, 2, 1, 1)


def test_agent_failure_streams_a_redacted_error(scripted: RunningServer) -> None:  # T101
    create(scripted, "E")
    response, frames = stream_chat(scripted.client, "E", {"message": "boom"})
    assert response.status_code == 200
    check_payloads(frames, "E")
    evs = events(frames)
    assert [name for name, _ in evs] == ["run.started", "message.started", "assistant.delta", "error", "done"]
    assert evs[3][1]["message"] == "kaboom sk-ant...CRET"
    session = get(scripted, "E")  # the user row landed before the agent failed; nothing after it
    assert (session["message_count"], session["api_call_count"]) == (1, 0)


def test_agent_failure_on_chat_is_a_500_envelope(scripted: RunningServer) -> None:  # D5
    create(scripted, "E5")
    r = scripted.client.post("/api/sessions/E5/chat", json={"message": "boom"})
    assert r.status_code == 500
    assert r.headers["content-type"] == "application/json; charset=utf-8"
    assert r.json() == {"error": {"message": "kaboom sk-ant...CRET", "type": "server_error",
                                  "param": None, "code": None}}
    assert get(scripted, "E5")["message_count"] == 1


def test_null_final_response(scripted: RunningServer) -> None:  # T98
    create(scripted, "N")
    r = scripted.client.post("/api/sessions/N/chat", json={"message": "nothing"})
    assert r.json()["message"] == {"role": "assistant", "content": None}
    _, frames = stream_chat(scripted.client, "N", {"message": "nothing"})
    assert dict(events(frames))["assistant.completed"]["content"] is None


def test_validation_errors_are_json(scripted: RunningServer) -> None:  # T103, T104
    create(scripted, "V")
    response, frames = stream_chat(scripted.client, "V", {"message": ""})
    assert (response.status_code, response.json(), frames) == (
        400, error("missing_message", "Missing 'message' field"), [])
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    response, _ = stream_chat(scripted.client, "NOPE", {"message": "hi"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "session_not_found")
    response, _ = stream_chat(scripted.client, "NOPE", {"message": "hi"}, headers={"X-Hermes-Session-Key": "k" * 257})
    assert response.status_code == 400


def timed_frames(client: httpx.Client, sid: str, body: dict[str, Any]) -> list[tuple[float, Frame]]:
    """Frames with the time each arrived, relative to the request."""
    started = time.monotonic()
    out: list[tuple[float, Frame]] = []
    buffer = b""
    with client.stream("POST", f"/api/sessions/{sid}/chat/stream", json=body) as response:
        for chunk in response.iter_raw():
            buffer += chunk
            complete, _, buffer = buffer.rpartition(b"\n\n")
            if complete:
                now = time.monotonic() - started
                out += [(now, frame) for frame in parse_frames(complete + b"\n\n")]
    assert buffer == b""
    return out


def test_keepalive_while_the_agent_stalls(scripted: RunningServer) -> None:  # T102
    create(scripted, "K")
    timed = timed_frames(scripted.client, "K", {"message": "stall"})
    kinds = [frame.name or frame.comment for _, frame in timed]
    start = kinds.index("assistant.delta")
    gap = kinds[start + 1:kinds.index("assistant.delta", start + 1)]
    assert gap and set(gap) == {"keepalive"} and 2 <= len(gap) <= 3, kinds  # 1.3 s stall / 0.4 s idle timer
    assert all(frame.raw == b": keepalive\n\n" for _, frame in timed if frame.comment)
    first_delta = timed[start][0]
    first_keepalive = timed[start + 1][0]
    assert KEEPALIVE * 0.8 <= first_keepalive - first_delta <= KEEPALIVE + 0.35
    assert "keepalive" not in kinds[kinds.index("assistant.completed"):]  # events keep the timer reset


def assistant_rows(db: Path, sid: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute(
            "SELECT content FROM messages WHERE session_id = ? AND role = 'assistant' ORDER BY id", (sid,))]


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def read_until_first_delta(client: httpx.Client, sid: str, message: str) -> None:
    with client.stream("POST", f"/api/sessions/{sid}/chat/stream", json={"message": message}) as response:
        for line in response.iter_lines():
            if line == "event: assistant.delta":
                return  # leaving the block closes the connection mid-turn


def test_disconnect_does_not_stop_or_undo_the_turn(scripted: RunningServer) -> None:
    create(scripted, "D")
    read_until_first_delta(scripted.client, "D", "slow")
    assert assistant_rows(scripted.db_path, "D") == []  # the client left while the agent was still working
    assert wait_for(lambda: assistant_rows(scripted.db_path, "D") == ["first second"])
    session = get(scripted, "D")
    assert (session["message_count"], session["api_call_count"]) == (2, 1)
    assert "Traceback" not in scripted.log()


def test_chat_client_giving_up_does_not_stop_the_turn(scripted: RunningServer) -> None:
    create(scripted, "DC")
    with pytest.raises(httpx.ReadTimeout):
        scripted.client.post("/api/sessions/DC/chat", json={"message": "slow"}, timeout=0.3)
    assert assistant_rows(scripted.db_path, "DC") == []
    assert wait_for(lambda: assistant_rows(scripted.db_path, "DC") == ["first second"])


def test_shutdown_waits_for_running_turns(tmp_path: Path) -> None:
    srv = start_scripted(tmp_path / "hermes")
    create(srv, "SD")
    read_until_first_delta(srv.client, "SD", "slow")
    started = time.monotonic()
    # uvicorn re-raises the signal after a clean shutdown, so the exit status is -SIGTERM.
    assert srv.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert time.monotonic() - started < 8
    assert assistant_rows(srv.db_path, "SD") == ["first second"]  # drained before state.db closed
    log = srv.log()
    assert "Application shutdown complete" in log
    assert "Traceback" not in log and "Task was destroyed" not in log and "cancelled" not in log
