"""Fault injection (issue 4): each kind does what it says, matches what it says, fires as often as it says,
and no fault ever leaves state.db corrupt or loses a write the client was told succeeded."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import error
from tests.support.server import RunningServer, start_server, start_with_script
from tests.support.sse import parse_frames

pytestmark = pytest.mark.in_process

SECURITY = ("content-security-policy", "x-frame-options", "referrer-policy")
TRANSPORT_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.ConnectError)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("faults") / "home", "--fixture-api")
    yield srv
    srv.stop()


@pytest.fixture
def c(srv: RunningServer) -> httpx.Client:
    """An empty database, no faults, an empty journal; one session `s` with a two-message transcript."""
    srv.client.post("/_fixture/reset", json={"to": "empty"})
    seeded = srv.client.post("/_fixture/seed", json={"sessions": [{"id": "s", "title": "Source", "messages": [
        {"role": "user", "content": "earlier question"}, {"role": "assistant", "content": "earlier answer"}]}]})
    assert seeded.status_code == 200
    return srv.client


def install(c: httpx.Client, *faults: dict[str, Any]) -> list[dict[str, Any]]:
    r = c.put("/_fixture/faults", json={"faults": list(faults)})
    assert r.status_code == 200, r.text
    return r.json()["data"]


def fired(c: httpx.Client) -> list[int]:
    return [f["fired"] for f in c.get("/_fixture/faults").json()["data"]]


def messages(c: httpx.Client, sid: str) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in c.get(f"/api/sessions/{sid}/messages").json()["data"]]


def wait_for(check, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


# -- status ---------------------------------------------------------------------------

def test_status_fault_answers_the_503_envelope_once(c: httpx.Client) -> None:
    (spec,) = install(c, {"route": "session_get", "kind": "status"})
    assert spec == {"id": "f1", "route": "session_get", "kind": "status", "times": 1, "fired": 0, "remaining": 1}
    r = c.get("/api/sessions/s")
    assert r.status_code == 503
    assert r.json() == error("session_db_unavailable", "Session database unavailable")
    assert all(h in r.headers for h in SECURITY)  # handler-made errors carry them; so does this one
    assert c.get("/api/sessions/s").status_code == 200
    assert c.get("/_fixture/faults").json()["data"] == [{**spec, "fired": 1, "remaining": 0}]


def test_status_variants(c: httpx.Client) -> None:
    install(c,
            {"route": "sessions_list", "kind": "status", "status": 429, "times": 2},
            {"route": "session_messages", "kind": "status", "status": 500, "times": "always"},
            {"route": "session_patch", "kind": "status", "status": 418, "message": "No tea", "code": "teapot"})
    for _ in range(2):
        r = c.get("/api/sessions")
        assert (r.status_code, r.headers["retry-after"]) == (429, "1")
        assert r.json() == {"error": {"message": "Too many concurrent runs (max 1)", "type": "rate_limit_error",
                                      "param": None, "code": "rate_limit_exceeded"}}
    assert c.get("/api/sessions").status_code == 200
    for _ in range(3):
        r = c.get("/api/sessions/s/messages")
        assert r.status_code == 500
        assert r.json() == {"error": {"message": "Internal server error", "type": "server_error", "param": None, "code": None}}
    r = c.patch("/api/sessions/s", json={"title": "Never"})
    assert (r.status_code, r.json()["error"]["message"], r.json()["error"]["code"]) == (418, "No tea", "teapot")
    assert c.get("/api/sessions/s").json()["session"]["title"] == "Source"  # before the handler: nothing written
    assert fired(c) == [2, 3, 1]


def test_status_after_the_handler_keeps_the_write(c: httpx.Client) -> None:
    install(c, {"route": "session_create", "kind": "status", "status": 502, "when": "after"})
    r = c.post("/api/sessions", json={"id": "made"})
    assert r.status_code == 502 and r.json()["error"]["code"] == "injected_fault"
    assert c.get("/api/sessions/made").status_code == 200


def test_matching_by_method_and_session_id(c: httpx.Client) -> None:
    c.post("/api/sessions", json={"id": "other"})
    install(c, {"route": "session", "method": "PATCH", "session_id": "s", "kind": "status", "times": "always"})
    assert c.get("/api/sessions/s").status_code == 200
    assert c.patch("/api/sessions/other", json={"title": "Fine"}).status_code == 200
    assert c.patch("/api/sessions/s", json={"title": "Blocked"}).status_code == 503
    assert c.get("/health").status_code == 200
    assert fired(c) == [1]


def test_probability_follows_the_seed(c: httpx.Client) -> None:
    def pattern() -> list[int]:
        install(c, {"route": "session_get", "kind": "status", "times": "always", "probability": 0.5, "seed": 11})
        return [c.get("/api/sessions/s").status_code for _ in range(24)]

    first = pattern()
    assert first == pattern()
    assert set(first) == {200, 503}


def test_put_replaces_post_adds_delete_clears_and_bad_specs_change_nothing(c: httpx.Client) -> None:
    install(c, {"id": "keep", "kind": "latency", "latency_ms": 1})
    r = c.post("/_fixture/faults", json={"kind": "status", "route": "session_get"})
    assert [f["id"] for f in r.json()["data"]] == ["keep", "f1"]
    r = c.put("/_fixture/faults", json={"faults": [{"kind": "status"}, {"kind": "stream_cut", "after_events": -1}]})
    assert r.status_code == 400
    assert r.json() == {"error": {"message": "$.faults[1].after_events: must be at least 0", "type": "invalid_request_error",
                                  "param": "$.faults[1].after_events", "code": "invalid_fault"}}
    assert [f["id"] for f in c.get("/_fixture/faults").json()["data"]] == ["keep", "f1"]
    assert c.post("/_fixture/faults", json={"id": "keep", "kind": "status"}).json()["error"]["param"] == "$.id"
    assert c.delete("/_fixture/faults").json() == {"object": "list", "data": []}


# -- latency, reset, storage -------------------------------------------------------------

def test_latency_before_and_after(c: httpx.Client) -> None:
    install(c, {"route": "session_get", "kind": "latency", "latency_ms": 300})
    started = time.monotonic()
    assert c.get("/api/sessions/s").status_code == 200
    assert time.monotonic() - started >= 0.3
    install(c, {"route": "session_create", "kind": "latency", "latency_ms": 1500, "when": "after"})
    with pytest.raises(httpx.ReadTimeout):
        c.post("/api/sessions", json={"id": "slow"}, timeout=0.3)
    # The client gave up, but the write had happened before the delay.
    assert c.get("/api/sessions/slow").status_code == 200


def test_connection_reset_before_and_after_the_handler(c: httpx.Client) -> None:
    install(c, {"route": "session_create", "kind": "connection_reset"})
    with pytest.raises(TRANSPORT_ERRORS):
        c.post("/api/sessions", json={"id": "never"})
    assert c.get("/api/sessions/never").status_code == 404
    install(c, {"route": "session_create", "kind": "connection_reset", "when": "after"})
    with pytest.raises(TRANSPORT_ERRORS):
        c.post("/api/sessions", json={"id": "lost-result"})
    assert c.get("/api/sessions/lost-result").status_code == 200
    (entry,) = c.get("/_fixture/requests", params={"session_id": "lost-result", "method": "POST"}).json()["data"]
    assert (entry["status"], entry["outcome"], entry["faults"]) == (None, "connection_reset", ["f1"])


def test_storage_unavailable_for_a_while(c: httpx.Client) -> None:
    install(c, {"kind": "storage_unavailable", "duration_ms": 600})
    r = c.get("/api/sessions")
    assert (r.status_code, r.json()) == (503, error("session_db_unavailable", "Session database unavailable"))
    assert c.post("/api/sessions", json={"id": "during"}).status_code == 503
    assert c.post("/api/sessions/s/chat", json={"message": "hi"}).status_code == 503
    assert c.get("/health").status_code == 200
    wait_for(lambda: c.get("/api/sessions/s").status_code == 200)
    assert c.get("/api/sessions/during").status_code == 404
    assert c.post("/api/sessions", json={"id": "after"}).status_code == 201


# -- fork ----------------------------------------------------------------------------------

@pytest.mark.parametrize("step, child_state", [
    (1, None),
    (2, (None, [])),
    (3, (None, [("user", "earlier question"), ("assistant", "earlier answer")])),
    (4, ("Source #2", [("user", "earlier question"), ("assistant", "earlier answer")])),
])
def test_fork_interrupted_after_each_step(c: httpx.Client, step: int, child_state: Any) -> None:
    install(c, {"route": "session_fork", "kind": "fork_interrupted", "after_step": step})
    with pytest.raises(TRANSPORT_ERRORS):
        c.post("/api/sessions/s/fork", json={"id": "child"})
    source = c.get("/api/sessions/s").json()["session"]
    assert source["end_reason"] == "branched"  # step 1 always happened
    child = c.get("/api/sessions/child")
    if child_state is None:
        assert child.status_code == 404
    else:
        assert child.json()["session"]["parent_session_id"] == "s"
        assert (child.json()["session"]["title"], messages(c, "child")) == child_state


def test_fork_interrupted_with_a_status(c: httpx.Client) -> None:
    install(c, {"route": "session_fork", "kind": "fork_interrupted", "after_step": 2, "status": 500})
    r = c.post("/api/sessions/s/fork", json={"id": "child"})
    assert (r.status_code, r.json()["error"]["type"]) == (500, "server_error")
    assert c.get("/api/sessions/child").status_code == 200
    assert c.post("/api/sessions/s/fork", json={"id": "child-2"}).status_code == 201  # fired once


# -- chat ------------------------------------------------------------------------------------

def test_history_load_failure_runs_the_turn_without_history(c: httpx.Client) -> None:
    install(c, {"route": "session_chat", "kind": "history_load_failure"})
    r = c.post("/api/sessions/s/chat", json={"message": "again"})
    assert r.status_code == 200
    assert r.json()["message"]["content"] == "ECHO-REPLY to: again [n=1]"  # it saw no history
    assert len(messages(c, "s")) == 4  # and still appended the turn
    assert c.post("/api/sessions/s/chat", json={"message": "third"}).json()["message"]["content"].endswith("[n=5]")


def test_persistence_failure_answers_but_stores_nothing(c: httpx.Client) -> None:
    install(c, {"kind": "persistence_failure", "times": 2})
    before = c.get("/api/sessions/s").json()["session"]
    r = c.post("/api/sessions/s/chat", json={"message": "lost"})
    assert r.status_code == 200 and r.json()["message"]["content"] == "ECHO-REPLY to: lost [n=3]"
    with c.stream("POST", "/api/sessions/s/chat/stream", json={"message": "lost too"}) as stream:
        names = [f.name for f in parse_frames(stream.read())]
    assert names[-3:] == ["assistant.completed", "run.completed", "done"]
    assert len(messages(c, "s")) == 2
    assert c.get("/api/sessions/s").json()["session"] == before
    assert c.post("/api/sessions/s/chat", json={"message": "kept"}).status_code == 200
    assert len(messages(c, "s")) == 4


@pytest.mark.parametrize("after", [0, 2, 3])
def test_stream_cut_after_n_events(c: httpx.Client, after: int) -> None:
    install(c, {"route": "session_chat_stream", "kind": "stream_cut", "after_events": after})
    raw = b""
    with pytest.raises(TRANSPORT_ERRORS):
        with c.stream("POST", "/api/sessions/s/chat/stream", json={"message": "cut me off"}) as r:
            assert r.status_code == 200
            for chunk in r.iter_raw():
                raw += chunk
    frames = parse_frames(raw[: raw.rfind(b"\n\n") + 2] if raw else b"")
    names = [f.name for f in frames if f.name]
    assert names == ["run.started", "message.started", "assistant.delta"][:after]
    # The turn was not cancelled by the cut: it finishes and is stored.
    wait_for(lambda: len(messages(c, "s")) == 4)
    assert messages(c, "s")[-1] == ("assistant", "ECHO-REPLY to: cut me off [n=3]")


# -- the database survives every fault ----------------------------------------------------------

def test_faults_never_corrupt_the_database(c: httpx.Client, srv: RunningServer) -> None:
    """Run every fault kind against writes; then the file is sound and each acknowledged write is there
    (except the turn a persistence_failure answers without storing, which is that fault's point)."""
    acknowledged: list[str] = []  # session ids whose creation the client saw succeed
    chats: dict[str, int] = {}  # session id -> chat turns acknowledged with a stored transcript expected

    def create(sid: str, **kw: Any) -> None:
        try:
            r = c.post("/api/sessions", json={"id": sid, "title": sid.upper()}, **kw)
        except httpx.TransportError:
            return
        if r.status_code == 201:
            acknowledged.append(sid)

    install(c,
            {"route": "session_create", "kind": "status", "times": 2},
            {"route": "session_create", "kind": "connection_reset", "when": "after", "times": 2},
            {"route": "session_create", "kind": "latency", "latency_ms": 50, "times": 3},
            {"route": "session_fork", "kind": "fork_interrupted", "after_step": 2},
            {"route": "session_fork", "kind": "fork_interrupted", "after_step": 3},
            {"route": "session_chat", "kind": "history_load_failure", "times": 2},
            {"route": "session_chat_stream", "kind": "stream_cut", "after_events": 1},
            {"route": "session_patch", "kind": "status", "status": 500, "when": "after"},
            {"kind": "storage_unavailable", "duration_ms": 200, "route": "session_delete"},
            {"kind": "persistence_failure", "session_id": "row-6"})
    for i in range(8):
        create(f"row-{i}")
    for target in ("f-a", "f-b", "f-c"):
        try:
            r = c.post("/api/sessions/s/fork", json={"id": target})
            if r.status_code == 201:
                acknowledged.append(target)
        except httpx.TransportError:
            pass
    for sid in acknowledged[:3]:
        if c.post(f"/api/sessions/{sid}/chat", json={"message": "hello"}).status_code == 200 and sid != "row-6":
            chats[sid] = chats.get(sid, 0) + 1  # row-6's turn is answered but, by design, not stored
    try:
        with c.stream("POST", f"/api/sessions/{acknowledged[0]}/chat/stream", json={"message": "x"}) as r:
            r.read()
    except httpx.TransportError:
        pass
    c.patch(f"/api/sessions/{acknowledged[1]}", json={"title": "Patched"})
    assert c.delete(f"/api/sessions/{acknowledged[2]}").status_code == 503
    assert fired(c) == [2, 2, 3, 1, 1, 2, 1, 1, 1, 1]
    # Refused before writing: row-0, row-1. Written, result lost: row-2, row-3, f-a, f-b. Acknowledged: the rest.
    assert acknowledged == ["row-4", "row-5", "row-6", "row-7", "f-c"]
    wait_for(lambda: c.get("/api/sessions/row-4").status_code == 200)  # the storage outage ends
    wait_for(lambda: len(messages(c, "row-4")) == 4)  # the cut stream's turn landed
    with sqlite3.connect(srv.db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        present = {row[0] for row in conn.execute("SELECT id FROM sessions")}
        assert set(acknowledged) <= present
        assert {"row-2", "row-3", "f-a", "f-b"} <= present and not {"row-0", "row-1"} & present
        for sid, turns in chats.items():
            stored = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,)).fetchone()[0]
            assert stored >= 2 * turns
        assert conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = 'row-6'").fetchone()[0] == 0
        title = conn.execute("SELECT title FROM sessions WHERE id = ?", (acknowledged[1],)).fetchone()[0]
        assert title == "Patched"  # the 500 came after the write; the write stands


def test_without_the_flag_no_fault_machinery_runs(server: RunningServer) -> None:
    assert server.client.put("/_fixture/faults", json={"kind": "status"}).status_code == 404
    assert server.client.get("/api/sessions").status_code == 200


def test_reset_waits_for_a_turn_still_running(tmp_path: Path) -> None:
    """A cut stream leaves its (slow) turn running; a reset must not let it write into the fresh state."""
    script = {"turns": [{"steps": [{"delta": "slow "}, {"sleep": 0.8}], "reply": "slow reply"}]}
    srv = start_with_script(tmp_path / "home", script, "--fixture-api")
    try:
        c = srv.client
        c.post("/_fixture/seed", json={"sessions": [{"id": "s"}]})
        install(c, {"kind": "stream_cut", "after_events": 1})
        with pytest.raises(TRANSPORT_ERRORS):
            with c.stream("POST", "/api/sessions/s/chat/stream", json={"message": "hi"}) as r:
                r.read()
        started = time.monotonic()
        assert c.post("/_fixture/reset", json={"to": "empty"}).json()["sessions_total"] == 0
        assert time.monotonic() - started >= 0.5  # it waited for the turn
        time.sleep(0.3)
        assert c.get("/api/sessions/s").status_code == 404  # the turn's late writes did not re-create it
    finally:
        srv.stop()
