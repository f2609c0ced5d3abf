"""Homes written by Hermes 0.20 (schema v25) and 0.21 (v30), served in every profile.

Sources (/work/shared/spec/hermes-after-0.19.md): §2.1 the version ladder and §2.2 the column and
table diff (upstream's `hermes_state_common.py` v30 SCHEMA_SQL [B, consistent with the R releases'
schema versions], `hermes_state_schema.py`), §2.3 the inferences; `has_system_prompt` follows
upstream's `COALESCE(sp.prompt, s.system_prompt)` reads and `last_active` its `_sql_freshest_of`
(docs/differences.md, "Storage across versions"). The homes are built by tests/support/newer_homes.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.newer_homes import PROMPT, T0, VERSIONS, build_home, schema_objects, version_of
from tests.support.server import KEY, RunningServer, clean_env, free_port, start_server

pytestmark = pytest.mark.in_process

PROFILES = ("0.19.0", "0.20.4", "0.21.2")


def flags_for(version: int, profile: str) -> tuple[str, ...]:
    """v25 lacks `hidden` and `last_read_at`, which a 0.20+ profile stores into."""
    migrate = ("--migrate-home",) if version == 25 and profile != "0.19.0" else ()
    return ("--hermes-version", profile, *migrate)


@pytest.fixture(scope="module", params=[(v, p) for v in VERSIONS for p in PROFILES],
                ids=lambda vp: f"v{vp[0]}-{vp[1]}")
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    version, profile = request.param
    home = tmp_path_factory.mktemp(f"v{version}") / "hermes"
    db_path = build_home(home, version)
    before = schema_objects(db_path)
    srv = start_server(home, *flags_for(version, profile))
    srv.version, srv.profile, srv.before = version, profile, before  # type: ignore[attr-defined]
    yield srv
    srv.stop()


def newer(srv: RunningServer) -> bool:
    return srv.profile != "0.19.0"  # type: ignore[attr-defined]


def listed(srv: RunningServer, query: str = "?limit=200") -> list[dict[str, Any]]:
    response = srv.client.get(f"/api/sessions{query}")
    assert response.status_code == 200, response.text
    return response.json()["data"]


def test_every_session_route_answers_without_a_5xx(served: RunningServer) -> None:
    """§2.3 "Writes into a v30 DB fire the display-order triggers and the trigram triggers already in the
    file; inserts need no new columns": each session route, on rows Hermes wrote and on new ones."""
    client = served.client
    patch_body: dict[str, Any] = {"title": "renamed"} | ({"pinned": True, "unread": True} if newer(served) else {})
    calls = [
        ("GET", "/api/sessions", None), ("GET", "/api/sessions?include_children=1&limit=1&offset=1", None),
        ("POST", "/api/sessions", {"id": "made-here", "system_prompt": "inline"}),
        ("GET", "/api/sessions/deduped", None), ("PATCH", "/api/sessions/deduped", patch_body),
        ("GET", "/api/sessions/deduped/messages", None),
        ("POST", "/api/sessions/made-here/chat", {"message": "hello v" + str(served.version)}),  # type: ignore[attr-defined]
        ("POST", "/api/sessions/deduped/chat/stream", {"message": "and a stream"}),
        ("POST", "/api/sessions/deduped/fork", {"id": "forked"}),
        ("GET", "/api/sessions/forked/messages", None),
        ("DELETE", "/api/sessions/plain", None), ("DELETE", "/api/sessions/cron-run", None),
    ]
    for method, path, body in calls:
        response = client.request(method, path, content=None if body is None else json.dumps(body))
        assert response.status_code < 500, (method, path, response.status_code, response.text)
        assert response.status_code in (200, 201), (method, path, response.text)
    assert [m["role"] for m in client.get("/api/sessions/made-here/messages").json()["data"]] == ["user", "assistant"]
    # The other routes that store turns into state.db: chat completions (into a Hermes-written row and
    # a new one) and the Responses API.
    completion = {"model": "hermes-agent", "messages": [{"role": "user", "content": "via completions"}]}
    for headers in ({"X-Hermes-Session-Id": "deduped"}, {}):
        response = client.post("/v1/chat/completions", json=completion, headers=headers)
        assert response.status_code == 200, response.text
    response = client.post("/v1/responses", json={"model": "hermes-agent", "input": "via responses"})
    assert response.status_code == 200, response.text


def test_the_file_keeps_its_version_and_every_newer_object(served: RunningServer) -> None:
    """§2.1: `schema_version` is never lowered (nor raised); the tables, views, triggers and indexes
    newer Hermes made stay as they are (only the `hs_*` indexes and, under --migrate-home, the
    profile's columns are added)."""
    served.client.get("/api/sessions")
    after = schema_objects(served.db_path)
    assert version_of(served.db_path) == served.version  # type: ignore[attr-defined]
    before = served.before  # type: ignore[attr-defined]
    assert set(after) == set(before)
    changed = {key for key in before if before[key] != after[key]}
    added_columns = served.version == 25 and newer(served)  # type: ignore[attr-defined]
    assert changed == ({("table", "sessions")} if added_columns else set())


def test_rows_written_here_satisfy_the_newer_columns(served: RunningServer) -> None:
    """§2.3: on v30 a message stored here gets its `display_order` from the file's trigger, the external-
    content FTS stays consistent (FTS5 integrity-check), and defaults fill the NOT NULL columns."""
    client = served.client
    assert client.post("/api/sessions", json={"id": "writer"}).status_code in (201, 409)
    assert client.post("/api/sessions/writer/chat", json={"message": "index me"}).status_code == 200
    with sqlite3.connect(served.db_path) as conn:
        row = conn.execute("SELECT git_metadata_generation FROM sessions WHERE id = 'writer'").fetchone()
        assert row == (0,)
        if served.version >= 30:  # type: ignore[attr-defined]
            orders = conn.execute("SELECT id, display_order FROM messages WHERE session_id = 'writer'").fetchall()
            assert orders and all(order == mid for mid, order in orders)
            conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
            hits = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'index'").fetchall()
            assert {mid for mid, _ in orders} & {hit for (hit,) in hits}


def test_has_system_prompt_counts_the_prompt_store_in_newer_profiles(served: RunningServer) -> None:
    """§2.3: v25's dedupe leaves `sessions.system_prompt` NULL behind `system_prompt_hash`. 0.20+ reads
    `COALESCE(sp.prompt, s.system_prompt)`, so the session has a prompt; 0.19.0 reads the column alone,
    as real 0.19.0 would on this file."""
    expected = newer(served)
    assert served.client.get("/api/sessions/quiet").json()["session"]["has_system_prompt"] is expected
    row = next(r for r in listed(served) if r["id"] == "quiet")
    assert row["has_system_prompt"] is expected
    with sqlite3.connect(served.db_path) as conn:
        assert conn.execute("SELECT prompt FROM system_prompts WHERE hash = 'h-prompt'").fetchone() == (PROMPT,)


def test_the_model_lock_clears_the_prompt_hash_too(served: RunningServer) -> None:
    """§1.4 "POST /api/sessions/{session_id}/model" [R V2 §B.11]: the lock nulls `system_prompt` and
    `system_prompt_hash`; the deduplicated prompt itself stays in `system_prompts`."""
    assert served.client.post("/api/sessions", json={"id": "to-lock"}).status_code == 201
    if not newer(served):  # 0.19.0 has no lock route
        assert served.client.post("/api/sessions/to-lock/model", json={"model": "hermes-agent"}).status_code == 404
        return
    with sqlite3.connect(served.db_path) as conn:
        conn.execute("UPDATE sessions SET system_prompt_hash = 'h-prompt' WHERE id = 'to-lock'")
    assert served.client.get("/api/sessions/to-lock").json()["session"]["has_system_prompt"] is True
    assert served.client.post("/api/sessions/to-lock/model", json={"model": "hermes-agent"}).status_code == 200
    assert served.client.get("/api/sessions/to-lock").json()["session"]["has_system_prompt"] is False
    with sqlite3.connect(served.db_path) as conn:
        assert conn.execute("SELECT system_prompt, system_prompt_hash FROM sessions WHERE id = 'to-lock'").fetchone() == (
            None, None)
        assert conn.execute("SELECT COUNT(*) FROM system_prompts WHERE hash = 'h-prompt'").fetchone() == (1,)


def test_last_active_counts_the_activity_heartbeat_in_newer_profiles(tmp_path: Path) -> None:
    """§2.3 "`last_active` should use the freshest of `last_activity_at` and the newest message": in 0.20+
    the heartbeat (T0+500) beats the newest message (T0+11) and orders the list; 0.19.0 ignores it."""
    for profile in PROFILES:
        for version in VERSIONS:
            home = tmp_path / f"{profile}-{version}" / "hermes"
            build_home(home, version)
            srv = start_server(home, *flags_for(version, profile))
            try:
                rows = {r["id"]: r for r in listed(srv)}
                order = [r["id"] for r in listed(srv)]
            finally:
                srv.stop()
            if profile == "0.19.0":
                assert rows["deduped"]["last_active"] == T0 + 11
                assert order.index("plain") < order.index("deduped")
            else:
                assert rows["deduped"]["last_active"] == T0 + 500
                assert order.index("deduped") < order.index("plain")
            assert rows["plain"]["last_active"] == T0 + 200


def test_v30_flags_are_read_by_newer_profiles_only(tmp_path: Path) -> None:
    """§1.4 "GET /api/sessions (changed)" [R V2 §B.1] on rows Hermes 0.21 flagged: 0.20+ hides the hidden
    row and back-fills the old pinned one past a short page; 0.19.0 knows no flags and lists both."""
    for profile in PROFILES:
        home = tmp_path / profile / "hermes"
        build_home(home, 30)
        srv = start_server(home, "--hermes-version", profile)
        try:
            page = [r["id"] for r in listed(srv, "?limit=2")]
            everything = [r["id"] for r in listed(srv)]
        finally:
            srv.stop()
        if profile == "0.19.0":
            assert "hidden-one" in everything and page == everything[:2]
        else:
            assert "hidden-one" not in everything
            assert page[-1] == "pinned-one" and len(page) == 3


# -- starting on a home that lacks the profile's columns (`serve --migrate-home`) -------------------


def serve(home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """A `serve` that is expected to refuse (exit 2) before it binds."""
    args = [sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--port", str(free_port()),
            "--api-key", KEY, *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=clean_env())


@pytest.mark.subprocess
def test_a_v25_home_is_refused_by_a_newer_profile_without_migrate_home(tmp_path: Path) -> None:
    """Issue 20: never migrate a home hermes-server did not create without saying so: exit 2, one
    line naming the schema version found and wanted, the file unchanged."""
    home = tmp_path / "hermes"
    db_path = build_home(home, 25)
    before = db_path.read_bytes()
    out = serve(home, "--hermes-version", "0.20.4")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    line = lines[0]
    for needle in ("is at Hermes schema version 25 without sessions.hidden, sessions.last_read_at",
                   "the 0.20.4 profile wants schema version 25 with them", "--migrate-home",
                   "The file was not changed."):
        assert needle in line
    assert db_path.read_bytes() == before


@pytest.mark.subprocess
def test_a_v22_home_of_hermes_0_19_needs_migrate_home_too(tmp_path: Path) -> None:
    """A 0.19.0 home (made here by the default profile) lacks all three columns."""
    home = tmp_path / "hermes"
    srv = start_server(home, in_process=True)
    try:
        assert srv.client.post("/api/sessions", json={"id": "old"}).status_code == 201
    finally:
        srv.stop()
    out = serve(home, "--hermes-version", "0.21.2")
    assert out.returncode == 2
    assert ("is at Hermes schema version 22 without sessions.pinned, sessions.hidden, sessions.last_read_at; "
            "the 0.21.2 profile wants schema version 22 with them") in out.stderr


@pytest.mark.subprocess
def test_migrate_home_adds_only_the_columns_and_says_so(tmp_path: Path) -> None:
    """With the flag: the start line names what it adds; the columns are upstream's declarations; the
    version, the prompt store and the rows stay; the flags then work on Hermes's own rows."""
    home = tmp_path / "hermes"
    db_path = build_home(home, 25)
    before = schema_objects(db_path)
    srv = start_server(home, "--hermes-version", "0.20.4", "--migrate-home", in_process=False)
    try:
        assert ("--migrate-home: adding sessions.hidden, sessions.last_read_at to "
                f"{db_path} for the 0.20.4 profile") in srv.log()
        session = srv.client.patch("/api/sessions/deduped", json={"hidden": True}).json()["session"]
        assert (session["pinned"], session["hidden"], session["has_system_prompt"]) == (False, True, True)
    finally:
        srv.stop()
    after = schema_objects(db_path)
    assert {k for k in before if before[k] != after[k]} == {("table", "sessions")}
    assert version_of(db_path) == 25
    with sqlite3.connect(db_path) as conn:
        info = {row[1]: (row[2], row[3], row[4]) for row in conn.execute("PRAGMA table_info(sessions)")}
    assert info["hidden"] == ("INTEGER", 1, "0") and info["last_read_at"] == ("REAL", 0, None)


def test_without_migrate_home_an_in_process_open_answers_503(tmp_path: Path) -> None:
    """The lazy open refuses the same way (state.db replaced under a running server): 503, never a 500."""
    home = tmp_path / "hermes"
    build_home(home, 25)
    srv = start_server(home, "--hermes-version", "0.20.4")
    try:
        response = srv.client.get("/api/sessions")
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "session_db_unavailable"
    finally:
        srv.stop()


@pytest.mark.subprocess
def test_a_schema_newer_than_v30_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    db_path = build_home(home, 30)
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE schema_version SET version = 31")
    out = serve(home)
    assert out.returncode == 2
    assert "is at Hermes schema version 31" in out.stderr and "schema versions 22 to 30" in out.stderr
