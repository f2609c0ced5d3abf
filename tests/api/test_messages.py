"""GET /api/sessions/{id}/messages (spec §4.6; vectors T61–T65; deviation D2)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.db import database_opened, insert_message, insert_session  # noqa: F401
from tests.support.http import JSON_TYPE, error, raw_request
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process

T0 = 1_700_000_000.0
KEYS = ["id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
        "token_count", "finish_reason", "reasoning", "reasoning_content"]


def messages(server: RunningServer, session_id: str) -> dict[str, Any]:
    r = server.client.get(f"/api/sessions/{session_id}/messages")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == JSON_TYPE
    return r.json()


def chain(server: RunningServer, tag: str) -> tuple[str, str, str]:
    db = server.db_path
    root, mid, tip = f"{tag}-R", f"{tag}-R2", f"{tag}-R3"
    insert_session(db, root, started_at=T0, end_reason="compression", ended_at=T0 + 10)
    insert_message(db, root, "user", "root q", T0 + 1)
    insert_session(db, mid, started_at=T0 + 20, parent=root, end_reason="compression", ended_at=T0 + 30)
    insert_message(db, mid, "user", "mid q", T0 + 21)
    insert_session(db, tip, started_at=T0 + 40, parent=mid)
    insert_message(db, tip, "user", "   third    ", T0 + 41)
    insert_message(db, tip, "assistant", "dropped", T0 + 42, active=0)
    insert_message(db, tip, "assistant", "tip a", T0 + 500)
    return root, mid, tip


def test_t61_compressed_root_resolves_to_its_tip(server: RunningServer) -> None:
    root, mid, tip = chain(server, "ms-t61")
    body = messages(server, root)
    assert list(body) == ["object", "session_id", "data"]
    assert (body["object"], body["session_id"]) == ("list", tip)
    assert [(m["session_id"], m["role"], m["content"]) for m in body["data"]] == [
        (tip, "user", "   third    "), (tip, "assistant", "tip a")]  # content raw, inactive row left out
    assert messages(server, mid)["session_id"] == tip  # T61b
    assert messages(server, tip)["session_id"] == tip


def test_tip_without_messages_is_still_the_answer(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "ms-e-R", started_at=T0, end_reason="compression")
    insert_message(db, "ms-e-R", "user", "only the root has messages", T0 + 1)
    insert_session(db, "ms-e-R2", started_at=T0 + 2, parent="ms-e-R")
    assert messages(server, "ms-e-R") == {"object": "list", "session_id": "ms-e-R2", "data": []}


def test_t62_d2_a_fork_never_takes_over_its_source(server: RunningServer) -> None:
    """D2: 0.19.0 answers with the newest fork's id and rows."""
    db = server.db_path
    insert_session(db, "ms-F", started_at=T0)
    insert_message(db, "ms-F", "user", "fork me", T0 + 1)
    for child in ("ms-FX1", "ms-FX"):
        assert server.client.post("/api/sessions/ms-F/fork", json={"id": child}).status_code == 201
    body = messages(server, "ms-F")
    assert body["session_id"] == "ms-F"
    assert [m["session_id"] for m in body["data"]] == ["ms-F"]
    child = messages(server, "ms-FX")
    assert (child["session_id"], [m["content"] for m in child["data"]]) == ("ms-FX", ["fork me"])


def test_d2_untagged_and_delegate_children_are_not_followed(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "ms-P", started_at=T0)
    insert_message(db, "ms-P", "user", "parent", T0 + 1)
    insert_session(db, "ms-U", started_at=T0 + 2, parent="ms-P")
    insert_message(db, "ms-U", "user", "untagged child", T0 + 3)
    insert_session(db, "ms-D", started_at=T0 + 4, parent="ms-P", model_config={"_delegate_from": "ms-P"})
    insert_message(db, "ms-D", "user", "delegate", T0 + 5)
    assert messages(server, "ms-P")["session_id"] == "ms-P"
    # An empty parent does not fall through to a child either.
    insert_session(db, "ms-P0", started_at=T0)
    insert_session(db, "ms-U0", started_at=T0 + 1, parent="ms-P0")
    insert_message(db, "ms-U0", "user", "child", T0 + 2)
    assert messages(server, "ms-P0") == {"object": "list", "session_id": "ms-P0", "data": []}


def test_compression_tip_rules_match_the_list(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "ms-tr", source="ms-tr", started_at=T0, end_reason="compression")
    insert_session(db, "ms-tr-closed", source="ms-tr", started_at=T0 + 1, parent="ms-tr", end_reason="ws_orphan_reap")
    insert_message(db, "ms-tr-closed", "user", "closed newest", T0 + 900)
    insert_session(db, "ms-tr-open", source="ms-tr", started_at=T0 + 2, parent="ms-tr")
    insert_session(db, "ms-tr-tool", source="tool", started_at=T0 + 3, parent="ms-tr")
    insert_session(db, "ms-tr-br", source="ms-tr", started_at=T0 + 4, parent="ms-tr",
                   model_config={"_branched_from": "ms-tr"})
    listed = server.client.get("/api/sessions?source=ms-tr").json()["data"]
    assert "ms-tr-open" in [row["id"] for row in listed]
    assert messages(server, "ms-tr")["session_id"] == "ms-tr-open"


def test_t63_message_objects(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "ms-63", started_at=T0)
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]
    first = insert_message(db, "ms-63", "user", parts, T0 + 1, api_content="hidden", platform_message_id="p1",
                           observed=1, effect_disposition="e", reasoning_details="[]")
    insert_message(db, "ms-63", "assistant", "answer", T0 + 2, reasoning="r", reasoning_content="rc",
                   token_count=5, finish_reason="stop",
                   tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    insert_message(db, "ms-63", "tool", "  out  ", T0 + 3, active=0, tool_call_id="c1", tool_name="f")
    data = messages(server, "ms-63")["data"]
    assert len(data) == 2
    assert all(list(m) == KEYS for m in data)
    assert data[0] == {"id": first, "session_id": "ms-63", "role": "user", "content": parts, "tool_call_id": None,
                       "tool_calls": None, "tool_name": None, "timestamp": T0 + 1, "token_count": None,
                       "finish_reason": None, "reasoning": None, "reasoning_content": None}
    assert data[1]["id"] == first + 1
    assert (data[1]["reasoning"], data[1]["reasoning_content"], data[1]["token_count"], data[1]["finish_reason"]) == (
        "r", "rc", 5, "stop")
    assert data[1]["tool_calls"] == [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]


def test_stored_values_that_do_not_decode(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "ms-raw", started_at=T0)
    rows = [("user", None, None), ("assistant", "\x00json:{broken", "not json"), ("tool", 42, "[]"),
            ("user", '\x00json:"text"', '{"a": 1}'), ("assistant", "", "")]
    for i, (role, content, calls) in enumerate(rows):
        insert_message(db, "ms-raw", role, content, T0 + i, tool_calls=calls)
    data = messages(server, "ms-raw")["data"]
    assert [(m["content"], m["tool_calls"]) for m in data] == [
        (None, None), ("\x00json:{broken", []), ("42", []),  # TEXT affinity stores 42 as "42"
        ("text", {"a": 1}), ("", "")]


def test_order_is_insertion_order_not_timestamp(server: RunningServer) -> None:
    db = server.db_path
    insert_session(db, "ms-order", started_at=T0)
    insert_message(db, "ms-order", "user", "first written, later clock", T0 + 9)
    insert_message(db, "ms-order", "assistant", "second written, earlier clock", T0 + 1)
    assert [m["content"] for m in messages(server, "ms-order")["data"]] == [
        "first written, later clock", "second written, earlier clock"]


def test_t64_missing_session(server: RunningServer) -> None:
    r = server.client.get("/api/sessions/NOPE/messages")
    assert (r.status_code, r.json()) == (404, error("session_not_found", "Session not found: NOPE"))


def test_t65_fresh_session(server: RunningServer) -> None:
    server.client.post("/api/sessions", json={"id": "ms-A"})
    r = raw_request(server, "GET", "/api/sessions/ms-A/messages")
    assert r.body == b'{"object": "list", "session_id": "ms-A", "data": []}'
    assert r.has_security_headers()


def test_archived_and_percent_encoded_ids(server: RunningServer) -> None:
    insert_session(server.db_path, "ms/arch ived", archived=1)
    insert_message(server.db_path, "ms/arch ived", "user", "still here", T0)
    body = raw_request(server, "GET", "/api/sessions/ms%2Farch%20ived/messages").json()
    assert (body["session_id"], [m["content"] for m in body["data"]]) == ("ms/arch ived", ["still here"])


def test_non_ascii_content_is_escaped(server: RunningServer) -> None:
    insert_session(server.db_path, "ms-utf", started_at=T0)
    insert_message(server.db_path, "ms-utf", "user", "caf\u00e9 \U0001f600", T0)
    r = raw_request(server, "GET", "/api/sessions/ms-utf/messages")
    assert b'"content": "caf\\u00e9 \\ud83d\\ude00"' in r.body
