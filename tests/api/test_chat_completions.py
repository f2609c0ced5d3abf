"""POST /v1/chat/completions over real sockets: OpenAI shapes, sessions it writes, errors, the `openai` client.

Over 400 lines on purpose: one route family, one module server, and the oracle-observed
expectations next to each other so a difference found by the side-by-side tool maps to one place.

Expected envelopes, headers, chunk shapes and stored rows are those observed on the
0.19.0 oracle for the same requests (tools/oracle_completions_diff.py compares them
side by side); derived session ids are upstream's own for the same conversation.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.http import JSON_TYPE, SECURITY_HEADERS, error, raw_request
from tests.support.server import KEY, RunningServer, start_server, start_with_script

pytestmark = pytest.mark.in_process

PATH = "/v1/chat/completions"
COMPLETION_ID = re.compile(r"chatcmpl-[0-9a-f]{29}")
CONTINUATION_ID = re.compile(r"\d{8}_\d{6}_[0-9a-f]{6}")
KEEPALIVE = 0.4
SECRET = "sk-ant-api03-SECRETSECRETSECRETSECRET"
SCRIPT = {"turns": [
    {"match": "tools", "steps": [
        {"delta": "Hel"}, {"reasoning": "pondering"},
        {"tool": "search", "args": {"q": "x"}, "preview": "search x", "result": "3 hits"},
        {"tool": "_internal", "args": {}, "result": "hidden"},
        {"tool": "fetch", "args": {}, "result": "timeout", "failed": True},
        {"delta": "lo"},
    ], "reply": "Hello", "usage": {"input_tokens": 30, "output_tokens": 2}},
    {"match": "boom", "steps": [{"delta": "partial"}, {"fail": f"kaboom {SECRET}"}]},
    {"match": "stall", "steps": [{"delta": "wait"}, {"sleep": 1.0}, {"delta": " done"}]},
    {"match": "slow", "steps": [{"delta": "first"}, {"sleep": 0.8}, {"delta": " second"}]},
    {"match": "nothing", "reply": None},
    {"reply": "scripted default"},
]}


# -- helpers ----------------------------------------------------------------------


@dataclass
class Frame:
    """One frame of a completions stream: a `data:` chunk, `[DONE]`, a tool event or a comment."""

    kind: str  # "chunk", "done", "tool", "comment"
    data: Any = None


def parse_stream(raw: bytes) -> list[Frame]:
    """Upstream's framing only: anything else (CRLF, `id:`, multi-line data) fails the test."""
    assert raw.endswith(b"\n\n"), raw[-80:]
    frames = []
    for block in raw.decode("ascii").split("\n\n")[:-1]:  # JSON is ASCII-escaped, as upstream writes it
        if block == ": keepalive":
            frames.append(Frame("comment"))
        elif block == "data: [DONE]":
            frames.append(Frame("done"))
        elif block.startswith("event: hermes.tool.progress\ndata: "):
            frames.append(Frame("tool", json.loads(block.split("\n", 1)[1][6:])))
        else:
            assert block.startswith("data: ") and "\n" not in block, block
            frames.append(Frame("chunk", json.loads(block[6:])))
    return frames


def complete(srv: RunningServer, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return srv.client.post(PATH, json=body, headers=headers)


def stream(srv: RunningServer, body: dict[str, Any], headers: dict[str, str] | None = None
           ) -> tuple[httpx.Response, list[Frame]]:
    with srv.client.stream("POST", PATH, json={"stream": True, **body}, headers=headers) as response:
        raw = b"".join(response.iter_raw())
    return response, parse_stream(raw) if response.headers.get("content-type") == "text/event-stream" else []


def user(*texts: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": t} for t in texts]}


def rows(srv: RunningServer, session_id: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(srv.db_path) as conn:
        return conn.execute("SELECT role, content, finish_reason FROM messages WHERE session_id = ? ORDER BY id",
                            (session_id,)).fetchall()


def counts(srv: RunningServer) -> tuple[int, int]:
    with sqlite3.connect(srv.db_path) as conn:
        return (conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])


def two_field(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def reply_text(frames: list[Frame]) -> str:
    return "".join(f.data["choices"][0]["delta"].get("content", "") for f in frames if f.kind == "chunk")


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The script agent (tools, failures, stalls), with rotation after 4 messages and a short keepalive."""
    srv = start_with_script(tmp_path_factory.mktemp("scripted") / "hermes", SCRIPT,
                            "--keepalive-seconds", str(KEEPALIVE), "--compress-after-messages", "4")
    yield srv
    srv.stop()


# -- non-streaming ------------------------------------------------------------------


def test_turn_answers_a_chat_completion_and_persists_it(server: RunningServer) -> None:
    r = complete(server, {"messages": [{"role": "system", "content": "be nice"},
                                       {"role": "user", "content": "hello there"}]})
    assert r.status_code == 200 and r.headers["content-type"] == JSON_TYPE
    assert all(r.headers[name] == value for name, value in SECURITY_HEADERS.items())
    # Upstream names the session after the conversation: the same id for the same request.
    assert r.headers["x-hermes-session-id"] == "api-51d389c0809fbe12"
    assert "x-hermes-session-key" not in r.headers
    body = r.json()
    assert list(body) == ["id", "object", "created", "model", "choices", "usage"]
    assert COMPLETION_ID.fullmatch(body["id"]) and abs(body["created"] - time.time()) < 60
    assert body["object"] == "chat.completion" and body["model"] == "hermes-agent"
    assert body["choices"] == [{"index": 0, "message": {"role": "assistant",
                                                        "content": "ECHO-REPLY to: hello there [n=1]"},
                                "finish_reason": "stop"}]
    assert body["usage"] == {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    # The system message is the turn's instruction: never stored.
    assert rows(server, "api-51d389c0809fbe12") == [
        ("user", "hello there", None), ("assistant", "ECHO-REPLY to: hello there [n=1]", "stop")]
    session = server.client.get("/api/sessions/api-51d389c0809fbe12").json()["session"]
    assert (session["source"], session["message_count"], session["api_call_count"]) == ("api_server", 2, 1)
    assert session["has_system_prompt"] and session["has_model_config"]


def test_resent_conversation_continues_its_session_with_the_client_history(server: RunningServer) -> None:
    first = {"messages": [{"role": "system", "content": "resend"}, {"role": "user", "content": "q1"}]}
    sid = complete(server, first).headers["x-hermes-session-id"]
    follow = {"messages": [*first["messages"], {"role": "assistant", "content": "anything"},
                           {"role": "user", "content": "q2"}]}
    r = complete(server, follow)
    assert r.headers["x-hermes-session-id"] == sid
    assert r.json()["choices"][0]["message"]["content"] == "ECHO-REPLY to: q2 [n=3]"  # the model saw 2 + 1
    # Only the new turns are stored, not the client's copy of the history.
    assert [row[1] for row in rows(server, sid)] == [
        "q1", "ECHO-REPLY to: q1 [n=1]", "q2", "ECHO-REPLY to: q2 [n=3]"]


def test_last_message_is_the_turn_and_other_roles_are_ignored(server: RunningServer) -> None:
    r = complete(server, {"messages": [
        {"role": "developer", "content": "dev"}, {"role": "user", "content": "q-last"},
        {"role": "tool", "content": "t"}, {"role": "assistant", "content": "assistant said last"}]},
        {"X-Hermes-Session-Id": "last-role"})
    assert r.json()["choices"][0]["message"]["content"] == "ECHO-REPLY to: assistant said last [n=1]"
    assert rows(server, "last-role")[0] == ("user", "assistant said last", None)


def test_multimodal_turn_is_stored_with_a_placeholder(server: RunningServer) -> None:
    content = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://e.x/a.png"}}]
    r = complete(server, {"messages": [{"role": "user", "content": content}]})
    assert r.status_code == 200 and r.headers["x-hermes-session-id"] == "api-36824ff637121752"
    assert rows(server, "api-36824ff637121752")[0] == ("user", "look\n[screenshot]", None)


@pytest.mark.parametrize("model", [None, 5, [1], {"a": 1}, "client-model"])
def test_model_is_echoed_as_sent(server: RunningServer, model: Any) -> None:
    assert complete(server, {"model": model, **user("m")}).json()["model"] == model


@pytest.mark.parametrize("flag, streamed", [
    (True, True), (1, True), ("yes", True), (" On ", True), ("false", False), (0, False), ([1], False),
    ("maybe", False), (None, False),
])
def test_stream_flag(server: RunningServer, flag: Any, streamed: bool) -> None:
    r = complete(server, {"stream": flag, **user("flag")})
    assert r.status_code == 200
    assert r.headers["content-type"] == ("text/event-stream" if streamed else JSON_TYPE)


# -- streaming ----------------------------------------------------------------------


def test_streamed_turn_sends_openai_chunks_then_done(server: RunningServer) -> None:
    r, frames = stream(server, {"model": "foo", **user("hello stream ✓")})
    assert r.status_code == 200
    assert {k: r.headers.get(k) for k in ("content-type", "cache-control", "x-accel-buffering")} == {
        "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no"}
    assert not any(name in r.headers for name in SECURITY_HEADERS)
    assert r.headers["x-hermes-session-id"] == "api-b1e6a1ee36134bab"
    chunks = [f.data for f in frames if f.kind == "chunk"]
    assert [f.kind for f in frames] == ["chunk"] * len(chunks) + ["done"]
    ids = {c["id"] for c in chunks}
    assert len(ids) == 1 and COMPLETION_ID.fullmatch(ids.pop())
    assert len({c["created"] for c in chunks}) == 1
    for c in chunks[:-1]:
        assert list(c) == ["id", "object", "created", "model", "choices"]
        assert (c["object"], c["model"], c["choices"][0]["index"], c["choices"][0]["finish_reason"]) == (
            "chat.completion.chunk", "foo", 0, None)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert len(chunks) > 3  # the reply arrives in pieces
    assert reply_text(frames) == "ECHO-REPLY to: hello stream ✓ [n=1]"
    last = chunks[-1]
    assert list(last) == ["id", "object", "created", "model", "choices", "usage"]
    assert last["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert last["usage"] == {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26}
    sid = r.headers["x-hermes-session-id"]
    assert rows(server, sid) == [("user", "hello stream ✓", None),
                                 ("assistant", "ECHO-REPLY to: hello stream ✓ [n=1]", "stop")]


def test_streamed_turn_continued_by_header_reads_back_as_a_session(server: RunningServer) -> None:
    assert server.client.post("/api/sessions", json={"id": "oa-cont", "title": "Via completions"}).status_code == 201
    headers = {"X-Hermes-Session-Id": "oa-cont"}
    r, frames = stream(server, {"messages": [{"role": "user", "content": "ignored"},
                                             {"role": "assistant", "content": "ignored too"},
                                             {"role": "user", "content": "turn one"}]}, headers)
    assert r.headers["x-hermes-session-id"] == "oa-cont"
    assert reply_text(frames) == "ECHO-REPLY to: turn one [n=1]"  # the stored history, not the body's
    r, frames = stream(server, user("turn two"), headers)
    assert reply_text(frames) == "ECHO-REPLY to: turn two [n=3]"
    r = complete(server, user("turn three"), headers)
    assert r.json()["choices"][0]["message"]["content"] == "ECHO-REPLY to: turn three [n=5]"
    listed = server.client.get("/api/sessions/oa-cont/messages").json()
    assert listed["session_id"] == "oa-cont"
    assert [(m["role"], m["content"], m["finish_reason"]) for m in listed["data"]] == [
        ("user", "turn one", None), ("assistant", "ECHO-REPLY to: turn one [n=1]", "stop"),
        ("user", "turn two", None), ("assistant", "ECHO-REPLY to: turn two [n=3]", "stop"),
        ("user", "turn three", None), ("assistant", "ECHO-REPLY to: turn three [n=5]", "stop"),
    ]
    session = server.client.get("/api/sessions/oa-cont").json()["session"]
    assert (session["title"], session["message_count"], session["api_call_count"]) == ("Via completions", 6, 3)


def test_header_creates_the_session_and_echoes_the_key(server: RunningServer) -> None:
    # Surrounding blanks are trimmed (httpx will not send them: raw request).
    r = raw_request(server, "POST", PATH, json.dumps(user("hi")).encode(),
                    {"X-Hermes-Session-Id": "  oa-created ", "X-Hermes-Session-Key": " chan-1 "})
    assert (r.headers["x-hermes-session-id"], r.headers["x-hermes-session-key"]) == ("oa-created", "chan-1")
    headers = {"X-Hermes-Session-Id": "oa-created", "X-Hermes-Session-Key": "chan-1"}
    r, _ = stream(server, user("again"), headers)
    assert (r.headers["x-hermes-session-id"], r.headers["x-hermes-session-key"]) == ("oa-created", "chan-1")
    session = server.client.get("/api/sessions/oa-created").json()["session"]
    assert (session["source"], session["title"], session["message_count"]) == ("api_server", None, 4)
    assert "chan-1" not in json.dumps(server.client.get("/api/sessions/oa-created/messages").json())


def test_blank_headers_are_absent_headers(server: RunningServer) -> None:
    r = raw_request(server, "POST", PATH, json.dumps(user("blank sid")).encode(),
                    {"X-Hermes-Session-Id": "  ", "X-Hermes-Session-Key": " "})
    assert r.headers["x-hermes-session-id"] == "api-cd4384556efb6271"  # upstream's id for this conversation
    assert "x-hermes-session-key" not in r.headers


# -- errors -------------------------------------------------------------------------

MISSING = two_field("Missing or invalid 'messages' field")
NO_USER = two_field("No user message found in messages")
PART_ERRORS = {
    "file": ([{"type": "file", "file": {}}], "unsupported_content_type",
             "Inline image inputs are supported, but uploaded files and document inputs are not supported on "
             "this endpoint."),
    "audio": ([{"type": "audio"}], "unsupported_content_type",
              "Unsupported content part type 'audio'. Only text and image_url/input_image parts are supported."),
    "ftp": ([{"type": "image_url", "image_url": {"url": "ftp://x"}}], "invalid_image_url",
            "Image inputs must use http(s) URLs or data:image/... URLs."),
    "no url": ([{"type": "image_url", "image_url": {}}], "invalid_image_url",
               "Image parts must include a non-empty image URL."),
    "data": ([{"type": "image_url", "image_url": "data:text/plain,abc"}], "unsupported_content_type",
             "Only image data URLs are supported. Non-image data payloads are not supported."),
    "detail": ([{"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": ""}}], "invalid_content_part",
               "Image detail must be a non-empty string when provided."),
}


@pytest.mark.parametrize("body, expected", [
    (b"", error(None, "Invalid JSON in request body")),
    (b"{x", error(None, "Invalid JSON in request body")),
    (b"{}", MISSING),
    (b'{"messages": []}', MISSING),
    (b'{"messages": "hi"}', MISSING),
    (b'{"messages": {"role": "user", "content": "x"}}', MISSING),
    (b'{"messages": [{"role": "system", "content": "x"}]}', NO_USER),
    (b'{"messages": [{"role": "user", "content": "  "}]}', NO_USER),
    (b'{"messages": [{"role": "user", "content": null}]}', NO_USER),
    (b'{"messages": [{"role": 1, "content": "x"}]}', NO_USER),
    # D6: 0.19.0 answers these with a bare text/plain 500.
    (b"[1]", error(None, "Request body must be a JSON object")),
    (b'"x"', error(None, "Request body must be a JSON object")),
    (b'{"messages": ["hi"]}', error(None, "Each message must be an object", "messages[0]")),
    (b'{"messages": [{"role": "user", "content": "x"}, null]}',
     error(None, "Each message must be an object", "messages[1]")),
    (b'{"messages": [{"role": ["user"], "content": "x"}]}', error(None, "Invalid message role", "messages[0].role")),
], ids=lambda v: v.decode() if isinstance(v, bytes) else None)
def test_refused_bodies(server: RunningServer, body: bytes, expected: dict[str, Any]) -> None:
    before = counts(server)
    for streamed in (False, True):  # a stream is refused before it starts, with the same answer
        payload = body if not streamed or not body.startswith(b'{"messages"') else b'{"stream": true, ' + body[1:]
        r = raw_request(server, "POST", PATH, payload)
        assert (r.status, r.headers["content-type"], r.json()) == (400, JSON_TYPE, expected)
        assert r.has_security_headers()
    assert counts(server) == before


@pytest.mark.parametrize("name", list(PART_ERRORS))
def test_bad_content_parts_name_the_message(server: RunningServer, name: str) -> None:
    content, code, message = PART_ERRORS[name]
    before = counts(server)
    r = complete(server, {"messages": [{"role": "user", "content": "ok"}, {"role": "assistant", "content": content}]})
    assert (r.status_code, r.json()) == (400, error(code, message, "messages[1].content"))
    assert counts(server) == before


def test_system_messages_are_flattened_never_refused(server: RunningServer) -> None:
    r = complete(server, {"messages": [{"role": "system", "content": [{"type": "zzz"}, "sys"]}, *user("x")["messages"]]})
    assert r.status_code == 200


def test_auth(server: RunningServer) -> None:
    expected = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789"}):
        r = raw_request(server, "POST", PATH, json.dumps(user("x")).encode(), headers, auth=False)
        assert (r.status, r.json()) == (401, expected) and r.has_security_headers()
    # The key is checked before the body is read.
    r = raw_request(server, "POST", PATH, b"{bad", auth=False)
    assert r.status == 401


def test_body_limit(server: RunningServer) -> None:
    too_large = {"error": {"message": "Request body too large.", "type": "invalid_request_error", "param": None,
                           "code": "body_too_large"}}
    r = raw_request(server, "POST", PATH, b"x" * 10_000_001, announce_only=True)
    assert (r.status, r.json()) == (413, too_large) and r.has_no_security_headers()
    # D4: a chunked body past the limit is a 413 too (0.19.0: 400 "Invalid JSON").
    r = raw_request(server, "POST", PATH, (b" " * 1_000_000 for _ in range(11)))
    assert (r.status, r.json()) == (413, too_large)


@pytest.mark.parametrize("headers, expected", [
    ({"X-Hermes-Session-Id": "a..b"}, two_field("Invalid session ID")),
    ({"X-Hermes-Session-Id": "a/b"}, two_field("Invalid session ID")),
    ({"X-Hermes-Session-Id": "a\\b"}, two_field("Invalid session ID")),
    ({"X-Hermes-Session-Id": "c:x"}, two_field("Invalid session ID")),
    ({"X-Hermes-Session-Id": "b" * 257}, two_field("Session ID too long")),
    ({"X-Hermes-Session-Id": b"\xff\xfe"}, two_field("Invalid session ID")),
    ({"X-Hermes-Session-Key": "k" * 257}, two_field("Session key too long")),
    # The session key is checked before the session id …
    ({"X-Hermes-Session-Id": "a/b", "X-Hermes-Session-Key": "k" * 257}, two_field("Session key too long")),
])
def test_session_headers_refused(server: RunningServer, headers: dict[str, Any], expected: dict[str, Any]) -> None:
    before = counts(server)
    for body in (user("x"), {"stream": True, **user("x")}):
        r = raw_request(server, "POST", PATH, json.dumps(body).encode(), headers)
        assert (r.status, r.json()) == (400, expected)
    assert counts(server) == before


def test_session_headers_are_checked_after_the_messages(server: RunningServer) -> None:
    r = raw_request(server, "POST", PATH, b"{}", {"X-Hermes-Session-Key": "k" * 257, "X-Hermes-Session-Id": "a/b"})
    assert (r.status, r.json()) == (400, MISSING)


def test_256_character_session_id_is_accepted(server: RunningServer) -> None:
    r = complete(server, user("long id"), {"X-Hermes-Session-Id": "i" * 256})
    assert (r.status_code, r.headers["x-hermes-session-id"]) == (200, "i" * 256)


def test_server_without_key_refuses_session_headers(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", key=None)
    try:
        r = complete(srv, user("x"), {"X-Hermes-Session-Id": "S"})
        assert (r.status_code, r.json()) == (403, error(
            None, "Session continuation requires API key authentication. Configure API_SERVER_KEY to enable "
                  "this feature."))
        r = complete(srv, user("x"), {"X-Hermes-Session-Key": "k"})
        assert (r.status_code, r.json()) == (403, error(
            None, "X-Hermes-Session-Key requires API key authentication. Configure API_SERVER_KEY to enable "
                  "this feature."))
        assert complete(srv, {}, {"X-Hermes-Session-Id": "S"}).json() == MISSING  # messages first
        for blank in (b" ", "\u00a0".encode()):  # Unicode blanks too, as upstream strips them
            r = raw_request(srv, "POST", PATH, json.dumps(user("open")).encode(), {"X-Hermes-Session-Id": blank})
            assert r.status == 200 and r.headers["x-hermes-session-id"] == "api-c0eaad35f8895113"
        assert srv.client.get("/api/sessions/S").status_code == 404
    finally:
        srv.stop()


# -- Idempotency-Key ----------------------------------------------------------------


def test_idempotency_key_replays_the_first_turn(server: RunningServer) -> None:
    headers = {"Idempotency-Key": "oa-idem-1", "X-Hermes-Session-Id": "oa-idem"}
    first = complete(server, user("idem turn"), headers)
    again = complete(server, user("idem turn"), headers)
    assert again.json()["choices"] == first.json()["choices"] and again.json()["id"] != first.json()["id"]
    assert len(rows(server, "oa-idem")) == 2  # no second turn
    # Only the request shape counts: the replay names the first turn's session.
    other = complete(server, user("idem turn"), {**headers, "X-Hermes-Session-Id": "oa-idem-x",
                                                  "X-Hermes-Session-Key": "kk"})
    assert (other.headers["x-hermes-session-id"], other.headers["x-hermes-session-key"]) == ("oa-idem", "kk")
    assert server.client.get("/api/sessions/oa-idem-x").status_code == 404
    # Another request under the same key is a new turn.
    changed = complete(server, user("idem turn 2"), headers)
    assert changed.json()["choices"][0]["message"]["content"] == "ECHO-REPLY to: idem turn 2 [n=3]"
    assert len(rows(server, "oa-idem")) == 4
    # Streams never replay.
    for _ in range(2):
        stream(server, user("idem stream"), {"Idempotency-Key": "oa-idem-s", "X-Hermes-Session-Id": "oa-idem-s"})
    assert len(rows(server, "oa-idem-s")) == 4


# -- agents: tools, failures, stalls, rotation ------------------------------------------


def test_tool_runs_stream_as_hermes_tool_progress(scripted: RunningServer) -> None:
    _r, frames = stream(scripted, user("tools please"), {"X-Hermes-Session-Id": "oa-tools"})
    tools = [f.data for f in frames if f.kind == "tool"]
    # `_internal` stays off the wire; a failed tool still ends `completed`; reasoning is not streamed.
    assert tools == [
        {"tool": "search", "emoji": "\u26a1", "label": "search x", "toolCallId": "call_1", "status": "running"},
        {"tool": "search", "toolCallId": "call_1", "status": "completed"},
        {"tool": "fetch", "emoji": "\u26a1", "label": "fetch", "toolCallId": "call_3", "status": "running"},
        {"tool": "fetch", "toolCallId": "call_3", "status": "completed"},
    ]
    assert reply_text(frames) == "Hello"
    assert frames[-2].data["usage"] == {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32}
    assert [row[0] for row in rows(scripted, "oa-tools")] == [
        "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]


def test_agent_failure_streamed_ends_with_an_error_chunk(scripted: RunningServer) -> None:
    r, frames = stream(scripted, user("boom"), {"X-Hermes-Session-Id": "oa-boom-s"})
    assert r.status_code == 200 and [f.kind for f in frames][-1] == "done"
    last = frames[-2].data
    assert reply_text(frames[:-2]) == "partial"
    assert last["choices"] == [{"index": 0, "delta": {}, "finish_reason": "error"}]
    assert last["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert last["error"] == {"message": "kaboom sk-ant...CRET", "type": "AgentError"}
    assert last["hermes"] == {"completed": True, "partial": False, "failed": True, "error": "kaboom sk-ant...CRET",
                              "error_code": "agent_error"}
    assert rows(scripted, "oa-boom-s") == [("user", "boom", None)]  # the user row stays, no reply row


def test_agent_failure_is_a_500_envelope(scripted: RunningServer) -> None:
    r = complete(scripted, user("boom"), {"X-Hermes-Session-Id": "oa-boom"})
    assert (r.status_code, r.json()) == (500, {"error": {
        "message": "Internal server error: kaboom sk-ant...CRET", "type": "server_error", "param": None, "code": None}})
    assert rows(scripted, "oa-boom") == [("user", "boom", None)]


def test_no_final_text_is_an_empty_reply(scripted: RunningServer) -> None:
    r = complete(scripted, user("nothing"))
    assert r.json()["choices"][0] == {"index": 0, "message": {"role": "assistant", "content": ""},
                                      "finish_reason": "stop"}


def test_stalled_agent_gets_keepalives(scripted: RunningServer) -> None:
    _, frames = stream(scripted, user("stall"))
    kinds = [f.kind for f in frames]
    assert "comment" in kinds and kinds[-1] == "done"
    assert reply_text(frames) == "wait done"


def test_client_that_leaves_does_not_stop_the_turn(scripted: RunningServer) -> None:
    with scripted.client.stream("POST", PATH, json={"stream": True, **user("slow")},
                                headers={"X-Hermes-Session-Id": "oa-gone"}) as response:
        next(response.iter_raw())
    deadline = time.monotonic() + 10
    while rows(scripted, "oa-gone")[-1:] != [("assistant", "first second", "stop")]:
        assert time.monotonic() < deadline, rows(scripted, "oa-gone")
        time.sleep(0.1)


def test_rotation_names_the_continuation_in_the_header(scripted: RunningServer) -> None:
    headers = {"X-Hermes-Session-Id": "oa-rot"}
    assert complete(scripted, user("one"), headers).headers["x-hermes-session-id"] == "oa-rot"
    assert complete(scripted, user("two"), headers).headers["x-hermes-session-id"] == "oa-rot"
    # A third turn would take the transcript past 4 messages: it goes to a continuation.
    r = complete(scripted, user("three"), headers)
    child = r.headers["x-hermes-session-id"]
    assert CONTINUATION_ID.fullmatch(child)
    parent = scripted.client.get("/api/sessions/oa-rot").json()["session"]
    assert (parent["ended_at"] is not None, parent["end_reason"]) == (True, "compression")
    assert scripted.client.get(f"/api/sessions/{child}").json()["session"]["parent_session_id"] == "oa-rot"
    assert rows(scripted, child)[-2:] == [("user", "three", None), ("assistant", "scripted default", "stop")]
    # The stream's headers leave before the turn runs: they name the requested id, as upstream's do.
    r, frames = stream(scripted, user("four"), {"X-Hermes-Session-Id": child})
    assert r.headers["x-hermes-session-id"] == child and frames[-1].kind == "done"


# -- discovery and a real OpenAI client ---------------------------------------------------


def test_capabilities_advertise_chat_completions(server: RunningServer) -> None:
    caps = server.client.get("/v1/capabilities").json()
    assert caps["features"]["chat_completions"] is True
    assert caps["features"]["chat_completions_streaming"] is True
    assert caps["endpoints"]["chat_completions"] == {"method": "POST", "path": "/v1/chat/completions"}
    assert [m["id"] for m in server.client.get("/v1/models").json()["data"]] == ["hermes-agent"]


def test_openai_client_holds_a_streamed_conversation_that_persists(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    assert [m.id for m in client.models.list()] == ["hermes-agent"]
    session = {"X-Hermes-Session-Id": "oa-client"}
    replies = []
    for text in ("Hello from the SDK", "And a follow-up"):
        pieces, usage = [], None
        for chunk in client.chat.completions.create(
                model="hermes-agent", stream=True, extra_headers=session,
                messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]):
            assert chunk.object == "chat.completion.chunk"
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
            usage = chunk.usage or usage
        replies.append("".join(pieces))
        assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens > 0
    assert replies == ["ECHO-REPLY to: Hello from the SDK [n=1]", "ECHO-REPLY to: And a follow-up [n=3]"]
    raw = client.chat.completions.with_raw_response.create(
        model="hermes-agent", extra_headers=session, messages=[{"role": "user", "content": "Plain now"}])
    assert raw.headers["x-hermes-session-id"] == "oa-client"
    assert raw.parse().choices[0].message.content == "ECHO-REPLY to: Plain now [n=5]"
    listed = server.client.get("/api/sessions/oa-client/messages").json()["data"]
    assert [(m["role"], m["content"]) for m in listed] == [
        ("user", "Hello from the SDK"), ("assistant", replies[0]),
        ("user", "And a follow-up"), ("assistant", replies[1]),
        ("user", "Plain now"), ("assistant", "ECHO-REPLY to: Plain now [n=5]"),
    ]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="hermes-agent", messages=[{"role": "system", "content": "alone"}])
    assert info.value.status_code == 400 and "No user message found" in str(info.value)
