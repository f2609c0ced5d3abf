"""GET /api/sessions (spec §4.1; vectors T31–T42).

Rows the API cannot create (other sources, compression chains, delegates, archived
rows, messages) are written with plain SQL, as another Hermes process would. Each
test uses its own `source`, so `?source=<tag>` isolates it on the shared server.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.db import database_opened, insert_message, insert_session, sql  # noqa: F401
from tests.support.http import JSON_TYPE, raw_request
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process

T0 = 1_700_000_000.0


def listing(server: RunningServer, query: str = "") -> dict[str, Any]:
    r = server.client.get("/api/sessions" + (f"?{query}" if query else ""))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == JSON_TYPE
    return r.json()


def ids(server: RunningServer, query: str) -> list[str]:
    return [row["id"] for row in listing(server, query)["data"]]


def rows_of(server: RunningServer, source: str, extra: str = "") -> list[dict[str, Any]]:
    return listing(server, f"source={source}&limit=200{extra}")["data"]


def plain_sessions(server: RunningServer, source: str, count: int) -> list[str]:
    """`count` roots of `source`, started one second apart (the last is the newest)."""
    made = []
    for i in range(count):
        session_id = f"{source}-{i}"
        insert_session(server.db_path, session_id, source=source, started_at=T0 + i)
        made.append(session_id)
    return made


def compression_chain(server: RunningServer, tag: str) -> tuple[str, str, str]:
    """T36's chain R -> R2 -> R3: R ended `compression` at t0+10, R3's last message at t0+500."""
    root, mid, tip = f"{tag}-R", f"{tag}-R2", f"{tag}-R3"
    db = server.db_path
    insert_session(db, root, source=tag, started_at=T0, end_reason="compression", ended_at=T0 + 10,
                   title=f"{tag} root title", system_prompt=None, model_config={"k": 1},
                   input_tokens=11, output_tokens=12, cache_read_tokens=13, cache_write_tokens=14,
                   reasoning_tokens=15, estimated_cost_usd=0.5, actual_cost_usd=0.25, api_call_count=3,
                   user_id="root-user", cwd="/root", model="root-model")
    insert_message(db, root, "user", "root question", T0 + 1)
    insert_message(db, root, "assistant", "root answer", T0 + 2)
    insert_session(db, mid, source=tag, started_at=T0 + 20, parent=root, end_reason="compression",
                   ended_at=T0 + 30, title=f"{tag} mid title")
    insert_message(db, mid, "user", "mid question", T0 + 21)
    insert_session(db, tip, source=tag, started_at=T0 + 40, parent=mid, title=None, model="tip-model",
                   system_prompt="tip prompt", tool_call_count=2)
    insert_message(db, tip, "user", "   third    ", T0 + 41)
    insert_message(db, tip, "assistant", "tip answer", T0 + 500)
    return root, mid, tip


# -- parameters -------------------------------------------------------------------


def test_envelope_shape(server: RunningServer) -> None:
    body = listing(server, "source=ls-none")
    assert body == {"object": "list", "data": [], "limit": 50, "offset": 0, "has_more": False}
    assert list(body) == ["object", "data", "limit", "offset", "has_more"]


def test_t31_limit_zero_has_more(server: RunningServer) -> None:
    plain_sessions(server, "ls-t31", 2)
    assert listing(server, "limit=0&source=ls-t31") == {
        "object": "list", "data": [], "limit": 0, "offset": 0, "has_more": True}
    assert listing(server, "limit=0&source=ls-empty")["has_more"] is True


@pytest.mark.parametrize(
    ("raw", "limit"),
    [("-1", 50), ("abc", 50), ("1.5", 50), ("", 50), ("0x10", 50), ("1e2", 50), ("%E2%82%81", 50),
     ("500", 200), ("200", 200), ("1_0", 10), ("%201%20", 1), ("%2B2", 2), ("+2", 2), ("%D9%A3", 3),
     ("%EF%BC%92", 2), ("3%00", 50), ("%203%0A", 3)],
)
def test_t32_limit_parsing(server: RunningServer, raw: str, limit: int) -> None:
    assert listing(server, f"limit={raw}&source=ls-none")["limit"] == limit


def test_t33_offset_cap(server: RunningServer) -> None:
    plain_sessions(server, "ls-t33", 2)
    body = listing(server, "offset=2000000&limit=1&source=ls-t33")
    assert (body["offset"], body["limit"], body["data"], body["has_more"]) == (1_000_000, 1, [], False)
    for raw, offset in [("-5", 0), ("x", 0), ("1_0", 10), ("%201", 1)]:
        assert listing(server, f"offset={raw}&source=ls-t33")["offset"] == offset


def test_t34_pages_and_has_more(server: RunningServer) -> None:
    made = plain_sessions(server, "ls-t34", 4)  # newest first: 3, 2, 1, 0
    body = listing(server, "limit=2&offset=1&source=ls-t34")
    assert [r["id"] for r in body["data"]] == [made[2], made[1]]
    assert body["has_more"] is True
    assert ids(server, "limit=2&offset=3&source=ls-t34") == [made[0]]
    assert listing(server, "limit=2&offset=3&source=ls-t34")["has_more"] is False
    assert listing(server, "limit=4&source=ls-t34")["has_more"] is True  # exactly full: true, as upstream
    assert ids(server, "limit=1&limit=5&source=ls-t34") == [made[3]]  # first value wins
    assert ids(server, "limit=&limit=5&source=ls-t34") == made[::-1]  # first value "" gives 50


def test_source_filter_is_exact(server: RunningServer) -> None:
    insert_session(server.db_path, "ls-src-a", source="ls-src")
    insert_session(server.db_path, "ls-src-b", source="LS-SRC")
    assert ids(server, "source=ls-src") == ["ls-src-a"]
    assert ids(server, "source=LS-SRC") == ["ls-src-b"]
    assert ids(server, "source=ls-sr") == []
    assert ids(server, "source=ls+src") == []  # '+' is a space in a query string
    body = listing(server, "source=&limit=200")  # empty source: no filter
    assert {"ls-src-a", "ls-src-b"} <= {r["id"] for r in body["data"]}


def test_t41_unknown_source_is_empty(server: RunningServer) -> None:
    server.client.post("/api/sessions", json={"id": "ls-t41"})
    assert listing(server, "source=cli")["data"] == []
    assert "ls-t41" in ids(server, "source=api_server&limit=200")


@pytest.mark.parametrize("value", ["yes", "1", "true", "on", "%20TRUE%20", "On", "%09yes%0A"])
def test_t35_include_children_true(server: RunningServer, value: str) -> None:
    tag = "ls-t35"
    if not sql(server.db_path, "SELECT 1 FROM sessions WHERE id = ?", f"{tag}-p"):
        insert_session(server.db_path, f"{tag}-p", source=tag, started_at=T0, end_reason="compression")
        insert_session(server.db_path, f"{tag}-c", source=tag, started_at=T0 + 1, parent=f"{tag}-p")
    assert ids(server, f"source={tag}&include_children={value}") == [f"{tag}-c", f"{tag}-p"]


@pytest.mark.parametrize("value", ["2", "y", "", "off", "no", "false", "0", "truee"])
def test_t35b_include_children_false(server: RunningServer, value: str) -> None:
    tag = "ls-t35b"
    if not sql(server.db_path, "SELECT 1 FROM sessions WHERE id = ?", f"{tag}-p"):
        insert_session(server.db_path, f"{tag}-p", source=tag, started_at=T0)
        insert_session(server.db_path, f"{tag}-c", source=tag, started_at=T0 + 1, parent=f"{tag}-p")
    assert ids(server, f"source={tag}&include_children={value}") == [f"{tag}-p"]


# -- compression projection ---------------------------------------------------------


def test_t36_compression_chain_is_shown_as_its_tip(server: RunningServer) -> None:
    root, _mid, tip = compression_chain(server, "ls-t36")
    data = rows_of(server, "ls-t36")
    assert len(data) == 1
    row = data[0]
    assert row == {
        "id": tip, "source": "ls-t36", "user_id": "root-user", "model": "tip-model", "title": None,
        "started_at": T0, "ended_at": None, "end_reason": None, "message_count": 2, "tool_call_count": 2,
        "input_tokens": 11, "output_tokens": 12, "cache_read_tokens": 13, "cache_write_tokens": 14,
        "reasoning_tokens": 15, "estimated_cost_usd": 0.5, "actual_cost_usd": 0.25, "api_call_count": 3,
        "parent_session_id": None, "last_active": T0 + 500, "preview": "third", "_lineage_root_id": root,
        "has_system_prompt": True, "has_model_config": True,
    }
    assert list(row)[-5:] == ["last_active", "preview", "_lineage_root_id", "has_system_prompt", "has_model_config"]


def test_t37_include_children_lists_raw_rows(server: RunningServer) -> None:
    root, mid, tip = compression_chain(server, "ls-t37")
    data = rows_of(server, "ls-t37", "&include_children=true")
    assert [r["id"] for r in data] == [tip, mid, root]  # all effective t0+500; started_at DESC
    assert all("_lineage_root_id" not in r for r in data)
    by_id = {r["id"]: r for r in data}
    assert by_id[root]["end_reason"] == "compression"
    assert by_id[root]["last_active"] == T0 + 2  # its own, not the chain's
    assert by_id[root]["title"] == "ls-t37 root title"
    assert by_id[mid]["parent_session_id"] == root


def test_chain_activity_orders_the_root(server: RunningServer) -> None:
    tag = "ls-order"
    compression_chain(server, tag)  # effective activity t0+500 although the root's own is t0+2
    insert_session(server.db_path, f"{tag}-newer", source=tag, started_at=T0 + 400)
    insert_session(server.db_path, f"{tag}-newest", source=tag, started_at=T0 + 600)
    assert ids(server, f"source={tag}") == [f"{tag}-newest", f"{tag}-R3", f"{tag}-newer"]


def test_tip_choice(server: RunningServer) -> None:
    """A continuing child first, then an open one, then the rest; then activity."""
    tag = "ls-tip"
    db = server.db_path
    insert_session(db, f"{tag}-r", source=tag, started_at=T0, end_reason="compression")
    insert_session(db, f"{tag}-closed", source=tag, started_at=T0 + 5, parent=f"{tag}-r", end_reason="ws_orphan_reap")
    insert_message(db, f"{tag}-closed", "user", "closed but newest", T0 + 900)
    insert_session(db, f"{tag}-open", source=tag, started_at=T0 + 1, parent=f"{tag}-r")
    insert_message(db, f"{tag}-open", "user", "open", T0 + 50)
    assert [(r["id"], r["_lineage_root_id"]) for r in rows_of(server, tag)] == [(f"{tag}-open", f"{tag}-r")]
    insert_session(db, f"{tag}-cont", source=tag, started_at=T0 + 2, parent=f"{tag}-r", end_reason="compression")
    insert_session(db, f"{tag}-deep", source=tag, started_at=T0 + 3, parent=f"{tag}-cont", title="deep")
    row = rows_of(server, tag)[0]
    assert (row["id"], row["title"], row["_lineage_root_id"]) == (f"{tag}-deep", "deep", f"{tag}-r")
    assert row["last_active"] == T0 + 3  # the tip's own activity (no messages: its started_at)


def test_non_continuations_are_not_followed(server: RunningServer) -> None:
    tag = "ls-nocont"
    db = server.db_path
    insert_session(db, f"{tag}-r", source=tag, started_at=T0, end_reason="compression")
    insert_session(db, f"{tag}-tool", source="tool", started_at=T0 + 1, parent=f"{tag}-r")
    insert_session(db, f"{tag}-br", source=tag, started_at=T0 + 2, parent=f"{tag}-r",
                   model_config={"_branched_from": f"{tag}-r"})
    insert_session(db, f"{tag}-dl", source=tag, started_at=T0 + 3, parent=f"{tag}-r",
                   model_config={"_delegate_from": f"{tag}-r"})
    data = rows_of(server, tag)
    assert [r["id"] for r in data] == [f"{tag}-br", f"{tag}-r"]  # the branch is listed; the root is not projected
    assert data[1]["end_reason"] == "compression" and "_lineage_root_id" not in data[1]


def test_tip_title_wins_even_when_null_and_root_keeps_its_counters(server: RunningServer) -> None:
    tag = "ls-null-title"
    db = server.db_path
    insert_session(db, f"{tag}-r", source=tag, started_at=T0, end_reason="compression", title="visible",
                   input_tokens=100, system_prompt="root prompt")
    insert_session(db, f"{tag}-t", source=tag, started_at=T0 + 1, parent=f"{tag}-r", title=None,
                   input_tokens=1, model_config={"tip": True})
    row = rows_of(server, tag)[0]
    assert (row["title"], row["input_tokens"], row["has_system_prompt"], row["has_model_config"]) == (
        None, 100, False, False)


# -- selection ----------------------------------------------------------------------


def test_t39_archived_rows_are_never_listed(server: RunningServer) -> None:
    tag = "ls-t39"
    insert_session(server.db_path, f"{tag}-a", source=tag, archived=1)
    insert_session(server.db_path, f"{tag}-v", source=tag)
    assert ids(server, f"source={tag}") == [f"{tag}-v"]
    assert ids(server, f"source={tag}&include_children=1") == [f"{tag}-v"]
    assert server.client.get(f"/api/sessions/{tag}-a").status_code == 200


def test_t42_delegates_and_untagged_children_hidden_by_default(server: RunningServer) -> None:
    tag = "ls-t42"
    db = server.db_path
    insert_session(db, f"{tag}-P", source=tag, started_at=T0)
    insert_session(db, f"{tag}-D", source=tag, started_at=T0 + 1, parent=f"{tag}-P",
                   model_config={"_delegate_from": f"{tag}-P"})
    insert_session(db, f"{tag}-U", source=tag, started_at=T0 + 2, parent=f"{tag}-P")
    sql(db, "UPDATE sessions SET end_reason = 'client_closed', ended_at = ? WHERE id = ?", T0 + 3, f"{tag}-P")
    assert ids(server, f"source={tag}") == [f"{tag}-P"]
    assert set(ids(server, f"source={tag}&include_children=true")) == {f"{tag}-P", f"{tag}-D", f"{tag}-U"}


def test_branch_children_are_listed(server: RunningServer) -> None:
    tag = "ls-branch"
    db = server.db_path
    insert_session(db, f"{tag}-P", source=tag, started_at=T0, end_reason="branched", ended_at=T0 + 10)
    insert_session(db, f"{tag}-at", source=tag, started_at=T0 + 10, parent=f"{tag}-P")  # started when it ended
    insert_session(db, f"{tag}-after", source=tag, started_at=T0 + 11, parent=f"{tag}-P")
    insert_session(db, f"{tag}-before", source=tag, started_at=T0 + 9, parent=f"{tag}-P")
    insert_session(db, f"{tag}-Q", source=tag, started_at=T0 + 20, end_reason="client_closed")
    insert_session(db, f"{tag}-marked", source=tag, started_at=T0 + 1, parent=f"{tag}-Q",
                   model_config={"_branched_from": f"{tag}-Q"})
    insert_session(db, f"{tag}-fork-of-closed", source=tag, started_at=T0 + 30, parent=f"{tag}-Q")
    assert set(ids(server, f"source={tag}")) == {f"{tag}-P", f"{tag}-at", f"{tag}-after", f"{tag}-Q", f"{tag}-marked"}


def test_roots_with_a_delegate_marker_are_hidden(server: RunningServer) -> None:
    tag = "ls-orphan"
    insert_session(server.db_path, f"{tag}-o", source=tag, model_config={"_delegate_from": "__orphaned__"})
    insert_session(server.db_path, f"{tag}-null", source=tag, model_config={"_delegate_from": None})
    insert_session(server.db_path, f"{tag}-other", source=tag, model_config={"x": 1})
    assert set(ids(server, f"source={tag}")) == {f"{tag}-null", f"{tag}-other"}
    assert len(ids(server, f"source={tag}&include_children=1")) == 3


def test_t38_forks_sort_at_their_sources_activity(fresh_server: RunningServer) -> None:
    db = fresh_server.db_path
    c = fresh_server.client
    insert_session(db, "F", started_at=T0)
    insert_message(db, "F", "user", "hello", T0 + 5)
    insert_message(db, "F", "assistant", "hi", T0 + 7)
    assert c.post("/api/sessions/F/fork", json={"id": "C1"}).status_code == 201
    assert c.post("/api/sessions/F/fork", json={"id": "C2"}).status_code == 201
    data = listing(fresh_server, "")["data"]
    assert [r["id"] for r in data] == ["C2", "C1", "F"]
    for row in data[:2]:
        assert row["last_active"] == T0 + 7
        assert row["last_active"] < row["started_at"]
        assert row["parent_session_id"] == "F"


def test_ties_break_by_started_at_then_id_binary(server: RunningServer) -> None:
    tag = "ls-ties"
    for session_id in (f"{tag}-B", f"{tag}-a", f"{tag}-\u00e9", f"{tag}-A"):
        insert_session(server.db_path, session_id, source=tag, started_at=T0)
    insert_session(server.db_path, f"{tag}-late", source=tag, started_at=T0 - 5)
    insert_message(server.db_path, f"{tag}-late", "user", "x", T0)  # same activity, older start
    assert ids(server, f"source={tag}") == [f"{tag}-\u00e9", f"{tag}-a", f"{tag}-B", f"{tag}-A", f"{tag}-late"]


# -- computed fields ------------------------------------------------------------------


def test_last_active_counts_inactive_messages(server: RunningServer) -> None:
    tag = "ls-last"
    insert_session(server.db_path, f"{tag}-m", source=tag, started_at=T0)
    insert_message(server.db_path, f"{tag}-m", "user", "x", T0 + 3)
    insert_message(server.db_path, f"{tag}-m", "assistant", "y", T0 + 9, active=0)
    insert_session(server.db_path, f"{tag}-empty", source=tag, started_at=T0 + 1)
    data = {r["id"]: r for r in rows_of(server, tag)}
    assert data[f"{tag}-m"]["last_active"] == T0 + 9
    assert data[f"{tag}-empty"]["last_active"] == T0 + 1
    assert ids(server, f"source={tag}") == [f"{tag}-m", f"{tag}-empty"]


@pytest.mark.parametrize(
    ("messages", "preview"),
    [
        ([("user", "b" * 61)], "b" * 60 + "..."),  # T40
        ([("user", "b" * 60)], "b" * 60),
        ([("user", "   " + "a" * 70)], "a" * 60),  # T40b: cut at 63 before trimming
        ([("user", "line1\nline2\r\nline3")], "line1 line2  line3"),  # T40c
        ([("user", ""), ("user", "second")], ""),  # T40d
        ([("user", "   "), ("user", "second")], ""),
        ([("user", [{"type": "text", "text": "hi"}]), ("user", "second")], ""),  # T40e
        ([("assistant", "not me"), ("user", None), ("user", "  me  ")], "me"),
        ([("user", "\u3000wide\u3000")], "wide"),
        ([("user", "\u00e9" * 61)], "\u00e9" * 60 + "..."),
        ([], ""),
    ],
)
def test_t40_preview(server: RunningServer, messages: list[tuple[str, Any]], preview: str) -> None:
    tag = f"ls-t40-{abs(hash(repr(messages))) % 10**8}"
    insert_session(server.db_path, tag, source=tag, started_at=T0)
    for i, (role, content) in enumerate(messages):
        insert_message(server.db_path, tag, role, content, T0 + 1 + i)
    assert rows_of(server, tag)[0]["preview"] == preview


def test_preview_uses_the_earliest_user_message_even_if_inactive(server: RunningServer) -> None:
    tag = "ls-prev-order"
    insert_session(server.db_path, tag, source=tag, started_at=T0)
    insert_message(server.db_path, tag, "user", "later", T0 + 5)
    insert_message(server.db_path, tag, "user", "earliest but rewound", T0 + 1, active=0)
    insert_message(server.db_path, tag, "user", "same time, higher id", T0 + 1)
    assert rows_of(server, tag)[0]["preview"] == "earliest but rewound"


def test_preview_bytes_are_ascii_escaped(server: RunningServer) -> None:
    tag = "ls-ascii"
    insert_session(server.db_path, tag, source=tag, started_at=T0)
    insert_message(server.db_path, tag, "user", "caf\u00e9 \U0001f600", T0 + 1)
    r = raw_request(server, "GET", f"/api/sessions?source={tag}")
    assert b'"preview": "caf\\u00e9 \\ud83d\\ude00"' in r.body


def test_other_processes_commits_are_seen_at_once(server: RunningServer) -> None:
    tag = "ls-fresh"
    assert ids(server, f"source={tag}") == []
    insert_session(server.db_path, f"{tag}-1", source=tag)
    assert ids(server, f"source={tag}") == [f"{tag}-1"]
    sql(server.db_path, "UPDATE sessions SET archived = 1 WHERE id = ?", f"{tag}-1")
    assert ids(server, f"source={tag}") == []
