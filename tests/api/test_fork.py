"""POST /api/sessions/{id}/fork (spec §4.7, vectors T66–T78): checks before writes, then the
non-atomic hazard: the source is closed and the child exists before the title is validated."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support.http import create_session as create
from tests.support.http import error
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process

SESSION_KEYS = [
    "id", "source", "user_id", "model", "title", "started_at", "ended_at", "end_reason", "message_count",
    "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd", "api_call_count", "parent_session_id",
    "has_system_prompt", "has_model_config",
]


def get(server: RunningServer, sid: str) -> dict[str, Any]:
    r = server.client.get("/api/sessions/" + sid.replace("/", "%2F"))
    assert r.status_code == 200, r.text
    return r.json()["session"]


def fork(server: RunningServer, sid: str, body: Any = None, **kw: Any):
    return server.client.post(f"/api/sessions/{sid}/fork", json={} if body is None else body, **kw)


def add_rows(db: Path, sid: str, rows: list[dict[str, Any]]) -> None:
    """Write transcript rows straight into state.db (what another Hermes process would do)."""
    with sqlite3.connect(db) as conn:
        for row in rows:
            cols = ", ".join(["session_id", *row])
            conn.execute(f"INSERT INTO messages ({cols}) VALUES ({', '.join('?' * (len(row) + 1))})",
                         [sid, *row.values()])
        conn.execute("UPDATE sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = ?"
                     " AND active = 1) WHERE id = ?", (sid, sid))


SOURCE_ROWS = [
    {"role": "user", "content": "first question", "timestamp": 1000.0, "reasoning": "user-side reasoning"},
    {"role": "assistant", "content": None, "timestamp": 1001.0, "finish_reason": "tool_calls",
     "tool_calls": '[{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]',
     "reasoning": "why search"},
    {"role": "tool", "content": "3 hits", "timestamp": 1002.0, "tool_call_id": "c1", "tool_name": "search"},
    {"role": "user", "content": "rewound", "timestamp": 1003.0, "active": 0},
]


@pytest.fixture(scope="module")
def source(server: RunningServer) -> str:
    """F: titled `Fork me`, 3 active messages (one assistant with 1 tool call) and one inactive row."""
    create(server, "F", title="Fork me", model="m-src", system_prompt="sp")
    add_rows(server.db_path, "F", SOURCE_ROWS)
    return "F"


def test_conflicts_and_bad_ids_write_nothing(server: RunningServer, source: str) -> None:
    create(server, "A")
    assert fork(server, source, {"id": "A"}).json() == error("session_exists", "Session already exists: A")  # T66
    r = fork(server, source, {"id": source})  # T67
    assert (r.status_code, r.json()["error"]["code"]) == (409, "session_exists")
    for bad in ("   ", "a\nb", "x\x00y"):  # T68
        r = fork(server, source, {"id": bad})
        assert (r.status_code, r.json()) == (400, error("invalid_session_id", "Invalid session ID"))
    r = server.client.post(f"/api/sessions/{source}/fork", content=b"[")  # T69
    assert (r.status_code, r.json()) == (400, error(None, "Invalid JSON in request body"))
    r = server.client.post(f"/api/sessions/{source}/fork", content=b"[1]")
    assert (r.status_code, r.json()) == (400, error(None, "Request body must be a JSON object"))
    r = server.client.post("/api/sessions/NOPE/fork", content=b"{")  # T69b: 404 before the body
    assert (r.status_code, r.json()) == (404, error("session_not_found", "Session not found: NOPE"))
    after = get(server, source)
    assert (after["end_reason"], after["ended_at"]) == (None, None)
    assert {row["id"] for row in server.client.get(
        "/api/sessions", params={"include_children": 1}).json()["data"]} == {"A", "F"}


def test_fork_copies_and_closes(server: RunningServer, source: str) -> None:  # T70
    r = fork(server, source)
    assert r.status_code == 201
    body = r.json()
    assert body["object"] == "hermes.session" and list(body["session"]) == SESSION_KEYS
    child = body["session"]
    assert re.fullmatch(r"api_\d+_[0-9a-f]{8}", child["id"])
    assert (child["title"], child["parent_session_id"], child["source"]) == ("Fork me #2", source, "api_server")
    assert (child["message_count"], child["tool_call_count"], child["model"]) == (3, 1, "m-src")
    assert (child["has_system_prompt"], child["has_model_config"], child["ended_at"]) == (True, False, None)
    assert get(server, source)["end_reason"] == "branched"

    copied = server.client.get(f"/api/sessions/{child['id']}/messages").json()
    assert copied["session_id"] == child["id"]
    rows = copied["data"]
    assert [(m["role"], m["timestamp"]) for m in rows] == [("user", 1000.0), ("assistant", 1001.0), ("tool", 1002.0)]
    assert rows[0]["reasoning"] is None and rows[1]["reasoning"] == "why search"  # reasoning only on assistant rows
    assert rows[1]["tool_calls"][0]["function"]["name"] == "search"
    assert (rows[2]["tool_call_id"], rows[2]["tool_name"]) == ("c1", "search")
    # D2: the source keeps its own transcript (0.19.0 would answer with the fork's).
    own = server.client.get(f"/api/sessions/{source}/messages").json()
    assert own["session_id"] == source and len(own["data"]) == 3


def test_lax_fork_ids(server: RunningServer, source: str) -> None:
    r = fork(server, source, {"id": "../evil"})  # T71
    assert (r.status_code, r.json()["session"]["id"]) == (201, "../evil")
    assert r.json()["session"]["title"].startswith("Fork me #")
    assert get(server, "../evil")["parent_session_id"] == source
    assert fork(server, source, {"id": "x" * 300}).status_code == 201  # T71b
    assert fork(server, source, {"id": "  spaced  "}).json()["session"]["id"] == "spaced"  # T71c
    assert fork(server, source, {"session_id": "viaSid"}).json()["session"]["id"] == "viaSid"  # T78
    generated = fork(server, source, {"id": 0, "session_id": ""}).json()["session"]["id"]  # T78b
    assert re.fullmatch(r"api_\d+_[0-9a-f]{8}", generated)
    assert fork(server, source, {"id": 12345}).json()["session"]["id"] == "12345"


def test_lineage_numbers_keep_counting(server: RunningServer) -> None:
    create(server, "LN", title="Lineage")
    titles = [fork(server, "LN", {"id": f"LN{i}"}).json()["session"]["title"] for i in range(3)]
    assert titles == ["Lineage #2", "Lineage #3", "Lineage #4"]
    create(server, "DL", title="Deal #5")
    assert fork(server, "DL", {"id": "DL2"}).json()["session"]["title"] == "Deal #6"  # T77
    create(server, "bx7", title="box #7")
    create(server, "BX", title="Box")
    assert fork(server, "BX", {"id": "BX2"}).json()["session"]["title"] == "Box #8"  # T77b: LIKE is case-blind
    create(server, "PCT", title="50% off")
    create(server, "PCX", title="50x off #9")
    assert fork(server, "PCT", {"id": "PCT2"}).json()["session"]["title"] == "50% off #2"  # % is escaped


def test_untitled_sources_share_the_fork_base(server: RunningServer) -> None:  # T75
    create(server, "U1")
    create(server, "U2")
    titles = [fork(server, sid, {"id": f"{sid}f"}).json()["session"]["title"] for sid in ("U1", "U2")]
    titles.append(fork(server, "U1f", {"id": "U1ff"}).json()["session"]["title"])
    assert titles == ["fork", "fork #2", "fork #3"]


def test_explicit_title_values(server: RunningServer, source: str) -> None:
    assert fork(server, source, {"id": "TE", "title": ""}).json()["session"]["title"] is None  # T75b
    assert fork(server, source, {"id": "TF", "title": False}).json()["session"]["title"] == "False"  # T75c
    assert fork(server, source, {"id": "TN", "title": None}).json()["session"]["title"].startswith("Fork me #")
    assert fork(server, source, {"id": "TS", "title": "  a\u0001b\t\tc  "}).json()["session"]["title"] == "ab c"


def assert_durable_child(server: RunningServer, child_id: str, parent: str, messages: int) -> None:
    child = get(server, child_id)
    assert (child["title"], child["parent_session_id"], child["message_count"]) == (None, parent, messages)
    assert len(server.client.get(f"/api/sessions/{child_id}/messages").json()["data"]) == messages
    assert get(server, parent)["end_reason"] == "branched"


def test_duplicate_title_fails_after_durable_writes(server: RunningServer) -> None:  # T72
    create(server, "HOLD", title="Held")
    create(server, "HS", title="Hazard source")
    add_rows(server.db_path, "HS", SOURCE_ROWS)
    r = fork(server, "HS", {"id": "FD", "title": "Held"})
    assert (r.status_code, r.json()) == (400, error("invalid_title", "Title 'Held' is already in use by session HOLD"))
    assert_durable_child(server, "FD", "HS", 3)
    # Retrying blindly now collides with the child the failed call left behind.
    assert fork(server, "HS", {"id": "FD"}).status_code == 409


def test_too_long_title_fails_after_durable_writes(server: RunningServer) -> None:  # T73
    create(server, "TL", title="Too long source")
    r = fork(server, "TL", {"id": "F101", "title": "y" * 101})
    assert (r.status_code, r.json()) == (400, error("invalid_title", "Title too long (101 chars, max 100)"))
    assert_durable_child(server, "F101", "TL", 0)


@pytest.mark.parametrize("length, outcome", [(97, "ok"), (98, "Title too long (101 chars, max 100)"),
                                              (100, "Title too long (103 chars, max 100)")])
def test_derived_title_can_be_too_long(server: RunningServer, length: int, outcome: str) -> None:  # T74
    sid = f"L{length}"
    create(server, sid, title="t" * length)
    r = fork(server, sid, {"id": sid + "c"})
    if outcome == "ok":
        assert r.json()["session"]["title"] == "t" * length + " #2"
        return
    assert (r.status_code, r.json()) == (400, error("invalid_title", outcome))
    assert_durable_child(server, sid + "c", sid, 0)


def test_closed_source_keeps_its_reason_and_hides_the_child(server: RunningServer) -> None:  # T76
    create(server, "CL", title="Closed source")
    server.client.patch("/api/sessions/CL", json={"end_reason": "client_closed"})
    ended_at = get(server, "CL")["ended_at"]
    assert fork(server, "CL", {"id": "CLf"}).status_code == 201
    assert (get(server, "CL")["end_reason"], get(server, "CL")["ended_at"]) == ("client_closed", ended_at)
    listed = {row["id"] for row in server.client.get("/api/sessions", params={"limit": 200}).json()["data"]}
    everything = {row["id"] for row in
                  server.client.get("/api/sessions", params={"limit": 200, "include_children": 1}).json()["data"]}
    assert "CLf" not in listed and "CLf" in everything


def test_open_source_fork_is_listed(server: RunningServer) -> None:  # §4.7.3
    create(server, "VIS", title="Visible source")
    fork(server, "VIS", {"id": "VISf"})
    listed = {row["id"] for row in server.client.get("/api/sessions", params={"limit": 200}).json()["data"]}
    assert {"VIS", "VISf"} <= listed


def test_fork_of_compressed_source_becomes_its_tip(server: RunningServer) -> None:  # §4.7.3, seed diff 15
    create(server, "CR", title="Compressed root")
    add_rows(server.db_path, "CR", SOURCE_ROWS[:1])
    server.client.patch("/api/sessions/CR", json={"end_reason": "compression"})
    fork(server, "CR", {"id": "CRf"})
    assert server.client.get("/api/sessions/CR/messages").json()["session_id"] == "CRf"
    rows = server.client.get("/api/sessions", params={"limit": 200}).json()["data"]
    tip = next(row for row in rows if row.get("_lineage_root_id") == "CR")
    assert tip["id"] == "CRf"
