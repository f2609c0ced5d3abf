"""POST /api/sessions/{id}/chat (spec §4.8, vectors T5–T8, T79–T99) with the default echo agent:
validation order and envelopes, what a turn persists, session keys, rotation."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes_server.agents.base import SYSTEM_PROMPT
from tests.support.db import session_row
from tests.support.http import create_session as create
from tests.support.http import error, raw_request
from tests.support.server import RunningServer, start_server
from tests.support.sse import events, stream_chat

pytestmark = pytest.mark.in_process

SECURITY = {"content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy"}


def get(server: RunningServer, sid: str) -> dict[str, Any]:
    return server.client.get(f"/api/sessions/{sid}").json()["session"]


def chat(server: RunningServer, sid: str, body: Any, **kw: Any) -> httpx.Response:
    if isinstance(body, (bytes, str)):
        return server.client.post(f"/api/sessions/{sid}/chat", content=body, **kw)
    return server.client.post(f"/api/sessions/{sid}/chat", json=body, **kw)


def transcript(server: RunningServer, sid: str) -> dict[str, Any]:
    return server.client.get(f"/api/sessions/{sid}/messages").json()


def raw_chat(server: RunningServer, sid: str, key_header: bytes, auth: bool = True) -> tuple[int, dict[bytes, bytes]]:
    """Chat with an X-Hermes-Session-Key value that httpx refuses to send (surrounding spaces)."""
    answer = raw_request(server, "POST", f"/api/sessions/{sid}/chat", b'{"message": "hi"}',
                         {"Content-Type": "application/json", "X-Hermes-Session-Key": key_header}, auth=auth)
    return answer.status, {name.encode(): value.encode("latin-1") for name, value in answer.headers.items()}


def test_chat_answers_and_persists_one_turn(server: RunningServer) -> None:  # T79
    create(server, "A", system_prompt="create-time prompt")
    r = chat(server, "A", {"message": "hi", "system_message": "be brief"})
    assert r.status_code == 200
    assert r.json() == {
        "object": "hermes.session.chat.completion",
        "session_id": "A",
        "message": {"role": "assistant", "content": "ECHO-REPLY to: hi [n=1]"},
        "usage": {"input_tokens": 20, "output_tokens": 4, "total_tokens": 24},
    }
    assert r.headers["x-hermes-session-id"] == "A" and "x-hermes-session-key" not in r.headers
    assert r.headers["content-type"] == "application/json; charset=utf-8" and SECURITY <= set(r.headers)

    session = get(server, "A")
    assert (session["message_count"], session["api_call_count"], session["input_tokens"],
            session["output_tokens"], session["estimated_cost_usd"]) == (2, 1, 20, 4, 0.0)
    assert (session["has_model_config"], session["has_system_prompt"], session["model"]) == (True, True, "hermes-agent")
    assert (session["ended_at"], session["tool_call_count"]) == (None, 0)
    stored = session_row(server.db_path, "A")
    assert stored["system_prompt"] == SYSTEM_PROMPT  # the create-time prompt is overwritten on an empty history
    assert json.loads(stored["model_config"]) == {"max_iterations": 90, "reasoning_config": None, "max_tokens": None}
    rows = transcript(server, "A")["data"]
    assert [(m["role"], m["content"], m["finish_reason"]) for m in rows] == [
        ("user", "hi", None), ("assistant", "ECHO-REPLY to: hi [n=1]", "stop")]
    assert "be brief" not in json.dumps(stored) + json.dumps(rows)  # the instruction is never persisted

    second = chat(server, "A", {"message": "again"}).json()
    assert second["message"]["content"] == "ECHO-REPLY to: again [n=3]"  # history of the exact id was loaded
    session = get(server, "A")
    assert (session["message_count"], session["api_call_count"], session["input_tokens"]) == (4, 2, 60)


def test_multimodal_user_row_is_flattened(server: RunningServer) -> None:  # T91
    create(server, "MM")
    parts = [{"type": "text", "text": "look"},
             {"type": "input_image", "image_url": " HTTPS://x/y.png ", "detail": "low"},
             {"type": "text", "text": "more"}]
    assert chat(server, "MM", {"message": parts}).json()["message"]["content"] == "ECHO-REPLY to: look more [n=1]"
    assert transcript(server, "MM")["data"][0]["content"] == "look\n[screenshot]\nmore"


def test_text_list_and_truncation_reach_the_agent(server: RunningServer) -> None:  # T92, T93
    create(server, "TX")
    raw = ["a", {"type": "input_text", "text": "b"}, {"type": "output_text", "text": 5}, 7, None]
    chat(server, "TX", {"message": raw})
    chat(server, "TX", {"message": "", "input": "z" * 70_000})  # T82b + T93
    rows = transcript(server, "TX")["data"]
    assert rows[0]["content"] == "a\nb\n5" and rows[2]["content"] == "z" * 65_536


PART = "message"
INVALID = [
    ({}, error("missing_message", "Missing 'message' field")),  # T81
    ({"message": "   ", "input": "x"}, error("missing_message", "Missing 'message' field")),  # T82
    ({"prompt": "x"}, error("missing_message", "Missing 'message' field")),  # T83
    ({"message": ["hello"]}, error("missing_message", "Missing 'message' field")),  # T84
    ({"message": {"text": "hi"}}, error("missing_message", "Missing 'message' field")),  # T84b
    ({"message": 5}, error("missing_message", "Missing 'message' field")),
    ({"message": [{"type": "text", "text": "a"}, {"type": "file", "file_id": "x"}]},  # T85
     error("unsupported_content_type", "Inline image inputs are supported, but uploaded files and document "
           "inputs are not supported on this endpoint.", PART)),
    ({"message": [{"type": "input_file"}]}, error("missing_message", "Missing 'message' field")),  # T85b
    ({"message": [{"type": "text", "text": "a"}, {"type": "audio"}]},  # T86
     error("unsupported_content_type", "Unsupported content part type 'audio'. Only text and "
           "image_url/input_image parts are supported.", PART)),
    ({"message": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]},  # T87
     error("invalid_image_url", "Image inputs must use http(s) URLs or data:image/... URLs.", PART)),
    ({"message": [{"type": "image_url", "image_url": {"url": "data:text/plain,abc"}}]},  # T88
     error("unsupported_content_type", "Only image data URLs are supported. Non-image data payloads are "
           "not supported.", PART)),
    ({"message": [{"type": "input_image", "image_url": "data:image/png;base64"}]},  # T88b
     error("unsupported_content_type", "Only image data URLs are supported. Non-image data payloads are "
           "not supported.", PART)),
    ({"message": [{"type": "image_url", "image_url": {"url": "  "}}]},  # T89
     error("invalid_image_url", "Image parts must include a non-empty image URL.", PART)),
    ({"message": [{"type": "image_url", "image_url": {"url": "http://x", "detail": ""}}]},  # T90
     error("invalid_content_part", "Image detail must be a non-empty string when provided.", PART)),
    ({"message": "hi", "system_message": 5},  # T94
     error("invalid_system_message", "system_message must be a string")),
    ({"message": "hi", "instructions": 5},  # T94b
     error("invalid_system_message", "system_message must be a string")),
    ({"message": [], "input": "  "}, error("missing_message", "Missing 'message' field")),
]


@pytest.mark.parametrize("body, envelope", INVALID)
def test_invalid_bodies(server: RunningServer, body: dict[str, Any], envelope: dict[str, Any]) -> None:
    sid = "INV"
    if server.client.get(f"/api/sessions/{sid}").status_code == 404:
        create(server, sid)
    r = chat(server, sid, body)
    assert (r.status_code, r.json()) == (400, envelope)
    assert SECURITY <= set(r.headers) and "x-hermes-session-id" not in r.headers
    assert get(server, sid)["message_count"] == 0  # nothing ran


def test_body_errors_come_after_the_404(server: RunningServer) -> None:
    assert chat(server, "NOPE", b"nope").json() == error("session_not_found", "Session not found: NOPE")  # T96
    create(server, "BODY")
    assert chat(server, "BODY", b"nope").json() == error(None, "Invalid JSON in request body")
    assert chat(server, "BODY", b"").json() == error(None, "Invalid JSON in request body")
    assert chat(server, "BODY", b"[1]").json() == error(None, "Request body must be a JSON object")
    r = chat(server, "BODY", '{"message": "hi"}'.encode("utf-8-sig"))  # a BOM is invalid JSON upstream
    assert r.json() == error(None, "Invalid JSON in request body")


def test_session_key_rules(server: RunningServer) -> None:
    too_long = {"X-Hermes-Session-Key": "k" * 257}
    r = chat(server, "NOPE", {"message": "hi"}, headers=too_long)  # T6: before the 404
    assert (r.status_code, r.json()) == (400, {"error": {"message": "Session key too long",
                                                         "type": "invalid_request_error"}})
    assert server.client.get("/api/sessions/NOPE", headers=too_long).status_code == 404  # T7: ignored elsewhere
    create(server, "KEY")
    status, headers = raw_chat(server, "KEY", b"  mem:1  ")  # T97
    assert (status, headers[b"x-hermes-session-key"]) == (200, b"mem:1")
    status, headers = raw_chat(server, "KEY", b"   ")  # T8
    assert status == 200 and b"x-hermes-session-key" not in headers
    r = chat(server, "KEY", {"message": "hi"}, headers={"X-Hermes-Session-Key": "k" * 256})
    assert r.headers["x-hermes-session-key"] == "k" * 256


def test_chat_on_an_ended_session_does_not_reopen_it(server: RunningServer) -> None:  # T99
    create(server, "END")
    closed = server.client.patch("/api/sessions/END", json={"end_reason": "client_closed"}).json()["session"]
    assert chat(server, "END", {"message": "still here?"}).status_code == 200
    after = get(server, "END")
    assert (after["end_reason"], after["ended_at"], after["message_count"]) == (
        "client_closed", closed["ended_at"], 2)


def test_chat_on_a_fork_source_appends_to_that_id(server: RunningServer) -> None:
    create(server, "SRC", title="Source")
    chat(server, "SRC", {"message": "one"})
    server.client.post("/api/sessions/SRC/fork", json={"id": "SRCf"})
    reply = chat(server, "SRCf", {"message": "child turn"}).json()
    assert reply["message"]["content"] == "ECHO-REPLY to: child turn [n=3]"  # copied history is used
    assert chat(server, "SRC", {"message": "two"}).json()["session_id"] == "SRC"
    assert (get(server, "SRC")["message_count"], get(server, "SRCf")["message_count"]) == (4, 4)
    child = get(server, "SRCf")
    assert (child["has_model_config"], child["api_call_count"]) == (True, 1)


def test_non_ascii_ids_are_sent_as_utf8_headers(server: RunningServer) -> None:
    create(server, "é☃x")
    r = chat(server, "%C3%A9%E2%98%83x", {"message": "hi"}, headers={"X-Hermes-Session-Key": "ké☃".encode()})
    raw = dict(r.headers.raw)
    assert raw[b"x-hermes-session-id"] == "é☃x".encode() and raw[b"x-hermes-session-key"] == "ké☃".encode()
    assert r.json()["session_id"] == "é☃x"


@pytest.fixture(scope="module")
def keyless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("keyless") / "hermes", key=None)
    yield srv
    srv.stop()


def test_session_key_without_server_key_is_refused(keyless: RunningServer) -> None:  # T5
    r = chat(keyless, "NOPE", {"message": "hi"}, headers={"X-Hermes-Session-Key": "abc"})
    assert (r.status_code, r.json()) == (403, error(None, "X-Hermes-Session-Key requires API key authentication. "
                                                      "Configure API_SERVER_KEY to enable this feature."))
    assert raw_chat(keyless, "NOPE", b"  ", auth=False)[0] == 404  # blank counts as absent
    create(keyless, "OPEN")
    assert chat(keyless, "OPEN", {"message": "hi"}).status_code == 200


def test_unauthenticated_chat_is_401(server: RunningServer) -> None:
    r = httpx.post(server.url + "/api/sessions/A/chat", json={"message": "hi"},
                   headers={"X-Hermes-Session-Key": "k" * 300})
    assert (r.status_code, r.json()["error"]["code"]) == (401, "invalid_api_key")


def test_unavailable_database(tmp_path: Path) -> None:  # T109, T109c
    (tmp_path / "hermes").write_text("HERMES_HOME is a regular file: state.db cannot be opened")
    srv = start_server(tmp_path / "hermes")
    try:
        r = chat(srv, "A", {"message": "hi"})
        assert (r.status_code, r.json()) == (503, error("session_db_unavailable", "Session database unavailable"))
        r = chat(srv, "A", b"{", headers={"X-Hermes-Session-Key": "k" * 300})
        assert r.json()["error"]["message"] == "Session key too long"
        with srv.client.stream("POST", "/api/sessions/A/chat/stream", json={"message": "hi"}) as streamed:
            assert (streamed.status_code, streamed.headers["content-type"]) == (503, "application/json; charset=utf-8")
    finally:
        srv.stop()


# -- compression rotation ---------------------------------------------------------

CONTINUATION = re.compile(r"\d{8}_\d{6}_[0-9a-f]{6}")


@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("rotating") / "hermes", "--compress-after-messages", "4")
    yield srv
    srv.stop()


def test_rotation_moves_the_turn_to_a_continuation(rotating: RunningServer) -> None:  # T80
    root = create(rotating, "R", title="Root title")
    assert chat(rotating, "R", {"message": "one"}).json()["session_id"] == "R"
    assert chat(rotating, "R", {"message": "two"}).json()["session_id"] == "R"  # 2 + 2 messages: not past 4
    r = chat(rotating, "R", {"message": "three"})
    tip = r.json()["session_id"]
    assert CONTINUATION.fullmatch(tip) and r.headers["x-hermes-session-id"] == tip
    assert r.json()["message"]["content"] == "ECHO-REPLY to: three [n=2]"  # summary + the new message

    parent = get(rotating, "R")
    assert (parent["end_reason"], parent["message_count"], parent["api_call_count"]) == ("compression", 4, 2)
    child = get(rotating, tip)
    assert (child["parent_session_id"], child["title"], child["message_count"], child["api_call_count"]) == (
        "R", "Root title #2", 3, 1)
    assert (child["model"], child["has_system_prompt"], child["has_model_config"], child["source"]) == (
        "hermes-agent", True, True, "api_server")

    for sid in ("R", tip):  # the root resolves to the tip, as for chains real Hermes writes
        resolved = transcript(rotating, sid)
        assert resolved["session_id"] == tip
        assert [m["role"] for m in resolved["data"]] == ["assistant", "user", "assistant"]
        assert resolved["data"][0]["content"].startswith("[CONTEXT SUMMARY]: 4 earlier messages of session R")
    listed = rotating.client.get("/api/sessions").json()["data"]
    assert [(x["id"], x.get("_lineage_root_id"), x["started_at"], x["preview"]) for x in listed] == [
        (tip, "R", root["started_at"], "three")]
    everything = {x["id"] for x in rotating.client.get("/api/sessions", params={"include_children": 1}).json()["data"]}
    assert everything == {"R", tip}

    # Streaming on the tip rotates again: only assistant.completed and run.completed carry the new id.
    response, frames = stream_chat(rotating.client, tip, {"message": "four"})
    assert response.headers["x-hermes-session-id"] == tip
    by_name = dict(events(frames))
    newest = by_name["assistant.completed"]["session_id"]
    assert CONTINUATION.fullmatch(newest) and newest != tip
    assert by_name["run.completed"]["session_id"] == newest
    assert {by_name[name]["session_id"] for name in ("run.started", "message.started", "done")} == {tip}
    assert transcript(rotating, "R")["session_id"] == newest
    assert get(rotating, newest)["title"] == "Root title #3"
