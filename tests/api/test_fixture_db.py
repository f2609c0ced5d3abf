"""hermes-server over a state.db written by upstream's own SessionDB (tests/fixtures/seed_state.db).

The fixture holds every scenario of `shared/oracle/seed_state.py` (recipe in
tests/fixtures/README.md); `seed_manifest.json` names the rows and says what the
pinned provider shows for them. Each test checks one of those `expect` entries.
D2 applies to the delegate scenario's `messages_parent`: hermes-server answers with
the parent's own transcript, not the untagged child's.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.db import session_row
from tests.support.http import error
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "seed_manifest.json").read_text())
_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)


def start_on_fixture(home: Path) -> RunningServer:
    home.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "seed_state.db", home / "state.db")
    return start_server(home)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_on_fixture(tmp_path_factory.mktemp("seeded") / "hermes")
    yield srv
    srv.stop()


def listed(server: RunningServer, query: str = "") -> list[dict[str, Any]]:
    r = server.client.get(f"/api/sessions?limit=200{query}")
    assert r.status_code == 200
    return r.json()["data"]


def messages(server: RunningServer, session_id: str) -> dict[str, Any]:
    r = server.client.get(f"/api/sessions/{session_id}/messages")
    assert r.status_code == 200, r.text
    return r.json()


def test_opening_upstreams_file_changes_nothing_but_hs_indexes(seeded: RunningServer) -> None:
    seeded.client.get("/api/sessions")
    assert make_fixtures.schema_text(seeded.db_path) == make_fixtures.schema_text(FIXTURES / "seed_state.db")
    conn = sqlite3.connect(seeded.db_path)
    try:
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'hs_%'")}
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(22,)]
    finally:
        conn.close()
    assert names == {"hs_messages_timestamp", "hs_sessions_title_nocase"}


def test_compression_list_default(seeded: RunningServer) -> None:
    c = MANIFEST["compression"]
    data = listed(seeded)
    chain_rows = [row for row in data if row["id"] in (c["root"], c["mid"], c["tip"])]
    assert len(chain_rows) == 1
    row = chain_rows[0]
    root, tip = session_row(seeded.db_path, c["root"]), session_row(seeded.db_path, c["tip"])
    assert (row["id"], row["_lineage_root_id"]) == (c["tip"], c["root"])
    assert row["started_at"] == root["started_at"]
    assert (row["title"], row["message_count"], row["end_reason"]) == (tip["title"], tip["message_count"],
                                                                       tip["end_reason"])
    assert row["title"] == "seed Compressed convo #3"
    assert row["preview"] == "[summary of mid]"
    assert row["has_system_prompt"] is False  # the tip's prompt (none); the root had one


def test_compression_list_include_children(seeded: RunningServer) -> None:
    c = MANIFEST["compression"]
    data = listed(seeded, "&include_children=1")
    chain_rows = [row for row in data if row["id"] in (c["root"], c["mid"], c["tip"])]
    assert [row["id"] for row in chain_rows] == [c["tip"], c["mid"], c["root"]]
    assert all("_lineage_root_id" not in row for row in chain_rows)
    assert chain_rows[2]["end_reason"] == "compression" and chain_rows[2]["has_system_prompt"] is True


def test_compression_messages_and_get(seeded: RunningServer) -> None:
    c = MANIFEST["compression"]
    body = messages(seeded, c["root"])
    assert body["session_id"] == c["tip"]
    assert [m["content"] for m in body["data"]] == ["[summary of mid]", "ok", "tip question", "tip answer"]
    assert messages(seeded, c["mid"])["session_id"] == c["tip"]
    root = seeded.client.get(f"/api/sessions/{c['root']}").json()["session"]
    assert (root["id"], root["end_reason"], root["title"]) == (c["root"], "compression", "seed Compressed convo")


def test_delegate_list_default(seeded: RunningServer) -> None:
    d = MANIFEST["delegate"]
    shown = {row["id"] for row in listed(seeded)}
    assert {d["parent"], d["branch_child"]} <= shown
    assert not {d["delegate_child"], d["delegate_grandchild"], d["delegate_marker_only"], d["plain_child"]} & shown
    everything = {row["id"] for row in listed(seeded, "&include_children=true")}
    assert {d["delegate_child"], d["delegate_grandchild"], d["delegate_marker_only"], d["plain_child"]} <= everything


def test_delegate_messages_parent_d2(seeded: RunningServer) -> None:
    """Upstream: the untagged newest child takes over; D2: the parent keeps its own transcript."""
    d = MANIFEST["delegate"]
    body = messages(seeded, d["parent"])
    assert body["session_id"] == d["parent"]
    assert [m["content"] for m in body["data"]] == ["please delegate", "delegating"]


def test_delegate_delete_parent(tmp_path: Path) -> None:
    d = MANIFEST["delegate"]
    srv = start_on_fixture(tmp_path / "hermes")
    try:
        r = srv.client.delete(f"/api/sessions/{d['parent']}")
        assert r.json() == {"object": "hermes.session.deleted", "id": d["parent"], "deleted": True}
        for gone in (d["parent"], d["delegate_child"], d["delegate_grandchild"], d["delegate_marker_only"]):
            assert srv.client.get(f"/api/sessions/{gone}").json() == error(
                "session_not_found", f"Session not found: {gone}")
        for kept in (d["plain_child"], d["branch_child"]):
            assert srv.client.get(f"/api/sessions/{kept}").json()["session"]["parent_session_id"] is None
        assert d["plain_child"] in {row["id"] for row in listed(srv)}
        conn = sqlite3.connect(srv.db_path)
        try:
            orphans = conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)").fetchone()[0]
        finally:
            conn.close()
        assert orphans == 0
    finally:
        srv.stop()


def test_sources(seeded: RunningServer) -> None:
    s = MANIFEST["sources"]
    shown = {row["id"]: row for row in listed(seeded)}
    assert {s["cli"], s["cron"], s["telegram"]} <= set(shown)
    assert (shown[s["cli"]]["source"], shown[s["cron"]]["source"], shown[s["telegram"]]["source"]) == (
        "cli", "cron", "telegram")
    assert [row["id"] for row in listed(seeded, "&source=cli")] == [s["cli"]]
    assert [row["id"] for row in listed(seeded, "&source=telegram")] == [s["telegram"]]
    tg = seeded.client.get(f"/api/sessions/{s['telegram']}").json()["session"]
    assert tg["user_id"] == "tg-user-42"
    assert seeded.client.get(f"/api/sessions/{s['cron']}").status_code == 200


def test_archived(seeded: RunningServer) -> None:
    a = MANIFEST["archived"]
    hidden = {a["plain"], a["chain_root"], a["chain_tip"]}
    assert not hidden & {row["id"] for row in listed(seeded)}
    assert not hidden & {row["id"] for row in listed(seeded, "&include_children=1")}
    for session_id in hidden:
        assert seeded.client.get(f"/api/sessions/{session_id}").status_code == 200
        assert seeded.client.get(f"/api/sessions/{session_id}/messages").status_code == 200
    assert messages(seeded, a["chain_root"])["session_id"] == a["chain_tip"]


def test_compacted_messages_and_list(seeded: RunningServer) -> None:
    c = MANIFEST["compacted"]
    body = messages(seeded, c["compacted"])
    assert [m["content"] for m in body["data"]] == ["[CONTEXT SUMMARY] old q1/q2 answered", "summary acknowledged"]
    conn = sqlite3.connect(seeded.db_path)
    try:
        archived_ids = [r[0] for r in conn.execute(
            "SELECT id FROM messages WHERE session_id = ? AND active = 0", (c["compacted"],))]
    finally:
        conn.close()
    assert len(archived_ids) == 4 and min(m["id"] for m in body["data"]) > max(archived_ids)
    row = next(r for r in listed(seeded) if r["id"] == c["compacted"])
    assert (row["message_count"], row["preview"]) == (2, "old q1")


def test_rewound_messages(seeded: RunningServer) -> None:
    c = MANIFEST["compacted"]
    body = messages(seeded, c["rewound"])
    assert [m["content"] for m in body["data"]] == ["keep q", "keep a"]
    row = seeded.client.get(f"/api/sessions/{c['rewound']}").json()["session"]
    assert row["message_count"] == 4


def test_whole_list_order_is_by_activity(seeded: RunningServer) -> None:
    """Every listed row sorts by its chain's newest activity, as upstream's query orders them."""
    data = listed(seeded)
    conn = sqlite3.connect(seeded.db_path)
    try:
        def activity(session_id: str) -> float:
            own = conn.execute("SELECT COALESCE(MAX(timestamp), (SELECT started_at FROM sessions WHERE id = ?))"
                               " FROM messages WHERE session_id = ?", (session_id, session_id)).fetchone()[0]
            return own
        keys = [activity(row["id"]) for row in data]  # a projected row carries its tip's id: the chain's newest
    finally:
        conn.close()
    assert keys == sorted(keys, reverse=True)
    assert len(data) == len({row["id"] for row in data})
