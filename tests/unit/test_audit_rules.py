"""The audit's rules on synthetic journal records (no server), and how fast a full journal is audited."""

from __future__ import annotations

import json
import time
from typing import Any

from hermes_server.app import build_routes
from hermes_server.testing.audit import RULES, audit, report
from hermes_server.testing.faults import ServedRoutes
from hermes_server.testing.journal import JOURNAL_LIMIT, Entry

# What each route of the default server does, as the audit reads it off the served table.
EFFECTS = ServedRoutes(build_routes()).effects

TEMPLATES = {
    "sessions": "/api/sessions", "session": "/api/sessions/{session_id}",
    "session_messages": "/api/sessions/{session_id}/messages", "session_fork": "/api/sessions/{session_id}/fork",
    "session_chat": "/api/sessions/{session_id}/chat", "session_chat_stream": "/api/sessions/{session_id}/chat/stream",
}


def entry(seq: int, method: str, route: str, sid: str | None = None, *, status: int | None = 200,
          outcome: str = "response", body: Any = None, answer: Any = None, query: str = "",
          headers: dict[str, str] | None = None, clock: float = 0.0, credential: bool = True) -> Entry:
    template = TEMPLATES[route]
    path = template.replace("{session_id}", sid or "")
    request = json.dumps(body).encode() if body is not None else b""
    response = json.dumps(answer).encode() if answer is not None else b""
    return Entry(seq=seq, time=0.0, method=method, path=path, query=query, route=route, template=template,
                 status=status, outcome=outcome, session_ids=[sid] if sid else [],
                 request_body=bytearray(request), request_bytes=len(request),
                 response_body=bytearray(response), response_bytes=len(response),
                 response_headers=headers or {}, clock=clock, credential=credential)


def rules(*entries: Entry) -> list[tuple[str, list[int]]]:
    return [(f.rule, list(f.requests)) for f in audit(entries, EFFECTS)]


def test_every_issue_rule_is_there() -> None:
    assert {"unsafe-replay", "stale-session-id", "fork-retry-without-inspection", "control-character-id",
            "retry-after-ignored", "zero-limit-list", "page-past-end"} <= set(RULES)


def test_unsafe_replay_needs_an_unknown_outcome_and_no_read_between() -> None:
    chat = {"message": "hi"}
    reset = entry(1, "POST", "session_chat", "s", status=None, outcome="connection_reset", body=chat)
    assert rules(reset, entry(2, "POST", "session_chat", "s", body=chat)) == [("unsafe-replay", [1, 2])]
    assert rules(reset, entry(2, "GET", "session_messages", "s"), entry(3, "POST", "session_chat", "s", body=chat)) == []
    assert rules(reset, entry(2, "POST", "session_chat", "s", body={"message": "other"})) == []
    answered = entry(1, "POST", "session_chat", "s", body=chat)
    assert rules(answered, entry(2, "POST", "session_chat", "s", body=chat)) == []
    idempotent = entry(1, "POST", "session_chat", "s", status=502, body=chat)
    idempotent.idempotency_key = True
    assert rules(idempotent, entry(2, "POST", "session_chat", "s", body=chat)) == []


def test_stale_session_id_follows_the_answered_id() -> None:
    rotated = entry(1, "POST", "session_chat", "s", headers={"x-hermes-session-id": "s2"})
    assert rules(rotated, entry(2, "PATCH", "session", "s", body={"title": "t"})) == [("stale-session-id", [1, 2])]
    assert rules(rotated, entry(2, "GET", "session", "s"), entry(3, "POST", "session_chat", "s2")) == []
    by_body = entry(1, "POST", "session_chat", "s", answer={"session_id": "s2"})
    assert rules(by_body, entry(2, "POST", "session_fork", "s")) == [("stale-session-id", [1, 2])]


def test_fork_retry_needs_both_rows_read() -> None:
    torn = entry(1, "POST", "session_fork", "s", status=None, outcome="connection_reset", body={"id": "c"})
    again = entry(4, "POST", "session_fork", "s", body={"id": "c2"})
    assert rules(torn, entry(2, "GET", "session", "s"), again) == [("fork-retry-without-inspection", [1, 4])]
    assert rules(torn, entry(2, "GET", "session", "s"), entry(3, "GET", "session", "c"), again) == []
    refused = entry(1, "POST", "session_fork", "s", status=409, body={"id": "c"})
    assert rules(refused, entry(2, "GET", "session", "c"), again) == [("fork-retry-without-inspection", [1, 4])]
    assert rules(refused, entry(2, "GET", "sessions"), again) == []  # a list shows both rows


def test_control_characters_in_path_or_body() -> None:
    assert rules(entry(1, "GET", "session", "a%0Db")) == [("control-character-id", [1])]
    assert rules(entry(1, "POST", "sessions", body={"id": "a\x00b"})) == [("control-character-id", [1])]
    assert rules(entry(1, "POST", "sessions", body={"id": "a-b"})) == []


def test_retry_after_counts_in_the_server_clock() -> None:
    refused = entry(1, "GET", "sessions", status=503, headers={"retry-after": "2"}, clock=100.0)
    assert rules(refused, entry(2, "GET", "sessions", clock=101.5)) == [("retry-after-ignored", [1, 2])]
    assert rules(refused, entry(2, "GET", "sessions", clock=102.0)) == []
    no_header = entry(1, "GET", "sessions", status=503, clock=100.0)
    assert rules(no_header, entry(2, "GET", "sessions", clock=100.0)) == []


def test_limits_and_pages() -> None:
    assert rules(entry(1, "GET", "sessions", query="limit=0")) == [("zero-limit-list", [1])]
    short = entry(1, "GET", "sessions", query="limit=2&offset=2", answer={"data": [{}]})
    after = entry(2, "GET", "sessions", query="limit=2&offset=4", answer={"data": []})
    assert rules(short, after) == [("page-past-end", [1, 2])]
    full = entry(1, "GET", "sessions", query="limit=2", answer={"data": [{}, {}]})
    assert rules(full, entry(2, "GET", "sessions", query="limit=2&offset=2", answer={"data": []})) == []
    other_filter = entry(2, "GET", "sessions", query="limit=2&offset=4&source=cli", answer={"data": []})
    assert rules(short, other_filter) == []


def test_the_audit_reads_calls_in_the_order_they_were_sent() -> None:
    """A seq is given when a request finishes: a chat sent first and overtaken by a delete is not a
    chat after the delete (the race-turn-recreates recipe), while a chat sent after it is."""
    chat, delete = entry(2, "POST", "session_chat", "s"), entry(1, "DELETE", "session", "s")
    chat.time, delete.time = 10.0, 10.15
    assert rules(delete, chat) == []
    chat.time = 10.3
    assert rules(delete, chat) == [("chat-after-close", [1, 2])]


def test_extra_rules() -> None:
    close = entry(1, "PATCH", "session", "s", body={"end_reason": "client_closed"})
    assert rules(close, entry(2, "POST", "session_chat", "s")) == [("chat-after-close", [1, 2])]
    title = entry(1, "PATCH", "session", "s", body={"title": "t"})
    assert rules(title, entry(2, "POST", "session_chat", "s")) == []
    assert rules(entry(1, "DELETE", "session", "s"), entry(2, "POST", "session_chat_stream", "s")) == \
        [("chat-after-close", [1, 2])]
    assert rules(entry(1, "GET", "session", "a b")) == [("unencoded-id", [1])]
    assert rules(entry(1, "GET", "session", "a%20b")) == []
    assert rules(entry(1, "GET", "sessions", status=401, credential=False)) == [("missing-credential", [1])]
    assert rules(entry(1, "GET", "sessions", status=401)) == []


def busy_journal() -> list[Entry]:
    """A full journal of mixed traffic with something for every rule to look at."""
    entries: list[Entry] = []
    for n in range(JOURNAL_LIMIT // 10):
        sid, chat = f"s{n}", {"message": f"turn {n}"}
        entries += [
            entry(0, "POST", "sessions", body={"id": sid}, status=201),
            entry(0, "POST", "session_chat", sid, body=chat, status=None, outcome="connection_reset"),
            entry(0, "GET", "session_messages", sid if n % 10 else "elsewhere"),  # every tenth: a blind replay
            entry(0, "POST", "session_chat", sid, body=chat, headers={"x-hermes-session-id": f"{sid}-2"}),
            entry(0, "POST", "session_fork", f"{sid}-2", body={"id": f"{sid}-f"}, status=503,
                  headers={"retry-after": "1"}),
            entry(0, "GET", "session", f"{sid}-2"),
            entry(0, "GET", "sessions", query="limit=50", answer={"data": [{"id": sid}] * 50}),
            entry(0, "GET", "sessions", query="limit=50&offset=50", answer={"data": [{"id": sid}] * 3}),
            entry(0, "PATCH", "session", f"{sid}-2", body={"end_reason": "client_closed"}),
            entry(0, "GET", "session", f"{sid}-f"),
        ]
    for seq, item in enumerate(entries, 1):
        item.seq = seq
    return entries


def test_a_full_journal_is_audited_fast(capsys: Any) -> None:
    """Reports the figure (issue 21 asks for under 50 ms); a machine this busy is no timer to assert on."""
    entries = busy_journal()
    assert len(entries) == JOURNAL_LIMIT
    report(entries, EFFECTS)  # warm-up
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        answer = report(entries, EFFECTS)
        runs.append((time.perf_counter() - started) * 1000)
    assert answer["checked"] == JOURNAL_LIMIT
    with capsys.disabled():
        print(f"\naudit of {JOURNAL_LIMIT} journal entries: best {min(runs):.1f} ms, worst {max(runs):.1f} ms "
              f"({len(answer['findings'])} findings)")
