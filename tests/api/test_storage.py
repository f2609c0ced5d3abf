"""state.db handling: 503 until it opens (T109), schema refusal, WAL, locks, clean shutdown, schema equality.

Also that upstream's own SessionDB opens, reads and writes a state.db hermes-server
created (hermes-agent 0.19.0 from the venv `make test` installs: tests/upstream.py).
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.db import sql
from tests.support.http import error, raw_request
from tests.support.server import KEY, RunningServer, clean_env, free_port, start_server
from tests.support.upstream import upstream_bin

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
UNAVAILABLE = error("session_db_unavailable", "Session database unavailable")
_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)


def serve_args(home: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--port", str(free_port()),
            "--api-key", KEY, *extra]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- T109: the database cannot be opened ------------------------------------------------


def test_t109_503_until_the_home_is_usable_then_recovers_without_restart(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a regular file where a directory should be")
    srv = start_server(blocker / "hermes")  # HERMES_HOME below a regular file
    try:
        for method, path, body in [
            ("GET", "/api/sessions", None),
            ("GET", "/api/sessions/x", None),
            ("POST", "/api/sessions", b'{"id": "x"}'),
            ("PATCH", "/api/sessions/x", b"{"),  # the 503 precedes the 404 and the JSON parse
            ("DELETE", "/api/sessions/x", None),
            ("GET", "/api/sessions/x/messages", None),
            ("POST", "/api/sessions/x/fork", b"{"),
            ("POST", "/api/sessions/x/chat", b'{"message": "hi"}'),
        ]:
            r = raw_request(srv, method, path, body)
            assert (r.status, r.json()) == (503, UNAVAILABLE), (method, path)
            assert r.has_security_headers()
        # T109b: create parses the JSON first.
        r = raw_request(srv, "POST", "/api/sessions", b"{")
        assert (r.status, r.json()) == (400, error(None, "Invalid JSON in request body"))
        # T109c: the session-key check precedes the 503 on chat.
        r = raw_request(srv, "POST", "/api/sessions/x/chat", b'{"message": "hi"}', {"X-Hermes-Session-Key": "k" * 300})
        assert (r.status, r.json()) == (400, {"error": {"message": "Session key too long", "type": "invalid_request_error"}})
        assert raw_request(srv, "GET", "/api/sessions", auth=False).status == 401  # auth first
        assert raw_request(srv, "GET", "/health", auth=False).status == 200

        blocker.unlink()  # fix the storage while the server runs
        blocker.mkdir()
        created = srv.client.post("/api/sessions", json={"id": "recovered"})
        assert created.status_code == 201
        assert srv.client.get("/api/sessions").json()["data"][0]["id"] == "recovered"
        assert (blocker / "hermes" / "state.db").is_file()
    finally:
        srv.stop()


def test_unopenable_database_file(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    (home / "state.db").mkdir(parents=True)  # a directory where the file should be
    srv = start_server(home)
    try:
        assert srv.client.get("/api/sessions").json() == UNAVAILABLE
        (home / "state.db").rmdir()
        assert srv.client.get("/api/sessions").status_code == 200
    finally:
        srv.stop()


def test_missing_home_is_created(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "a" / "b" / "hermes")
    try:
        assert srv.client.post("/api/sessions", json={"id": "deep"}).status_code == 201
        assert (tmp_path / "a" / "b" / "hermes" / "state.db").is_file()
    finally:
        srv.stop()


# -- schema ---------------------------------------------------------------------------


def test_fresh_schema_equals_upstreams(fresh_server: RunningServer) -> None:
    fresh_server.client.get("/api/sessions")
    ours = make_fixtures.schema_text(fresh_server.db_path)
    assert ours == (FIXTURES / "upstream_schema.sql").read_text(encoding="utf-8")
    conn = sqlite3.connect(fresh_server.db_path)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(22,)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        hs = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'hs\\_%' ESCAPE '\\'"))
    finally:
        conn.close()
    assert hs == ["hs_messages_timestamp", "hs_sessions_title_nocase"]


def write_version(path: Path, version: int | None) -> None:
    conn = sqlite3.connect(path)
    try:
        if version is None:
            conn.execute("DROP TABLE schema_version")
        else:
            conn.execute("UPDATE schema_version SET version = ?", (version,))
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(("version", "needles"), [
    (21, ["is at Hermes schema version 21", "Open it once with hermes-agent 0.19.0", "migrates it"]),
    # v23-v30 (Hermes 0.20/0.21) are served as they are (tests/api/test_storage_versions.py).
    (31, ["is at Hermes schema version 31", "newer than any whose storage hermes-server has read"]),
    (None, ["is not a Hermes state.db (it has no schema_version table)", "empty directory"]),
])
def test_other_schema_versions_are_refused_and_left_untouched(tmp_path: Path, version: int | None,
                                                             needles: list[str]) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    shutil.copyfile(FIXTURES / "seed_state.db", home / "state.db")
    write_version(home / "state.db", version)
    before = digest(home / "state.db")
    out = subprocess.run(serve_args(home), capture_output=True, text=True, timeout=30, env=clean_env())
    assert out.returncode == 2
    assert str(home / "state.db") in out.stderr
    for needle in needles + ["The file was not changed."]:
        assert needle in out.stderr
    assert digest(home / "state.db") == before
    assert sorted(p.name for p in home.iterdir()) == ["state.db"]  # no -wal/-shm either


def test_non_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    (home / "state.db").write_bytes(b"not a database at all" * 100)
    before = digest(home / "state.db")
    out = subprocess.run(serve_args(home), capture_output=True, text=True, timeout=30, env=clean_env())
    assert out.returncode == 2, out.stderr
    assert "is not an SQLite database" in out.stderr and "The file was not changed." in out.stderr
    assert digest(home / "state.db") == before


# -- concurrency with other processes ----------------------------------------------------


def test_writes_wait_for_another_processes_lock_and_reads_do_not(server: RunningServer) -> None:
    server.client.get("/api/sessions?limit=0")
    holder = sqlite3.connect(server.db_path, isolation_level=None, timeout=10)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO sessions (id, source, started_at) VALUES ('st-held', 'cli', 1)")
    result: dict[str, object] = {}

    def create() -> None:
        started = time.monotonic()
        result["status"] = server.client.post("/api/sessions", json={"id": "st-after-lock"}).status_code
        result["seconds"] = time.monotonic() - started

    writer = threading.Thread(target=create)
    writer.start()
    time.sleep(0.3)
    started = time.monotonic()
    assert server.client.get("/api/sessions/st-after-lock").status_code == 404  # a read answers at once
    assert time.monotonic() - started < 0.5
    time.sleep(1.5)  # longer than SQLite's 1 s busy timeout: the writer must keep retrying
    holder.execute("COMMIT")
    holder.close()
    writer.join(20)
    assert result["status"] == 201
    assert result["seconds"] >= 1.5
    assert server.client.get("/api/sessions/st-held").status_code == 200


# -- shutdown -------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_shutdown_loses_no_acknowledged_write(tmp_path: Path, sig: signal.Signals) -> None:
    home = tmp_path / "hermes"
    srv = start_server(home)
    for i in range(20):
        assert srv.client.post("/api/sessions", json={"id": f"st-{i}", "title": f"st {i}"}).status_code == 201
    assert srv.client.patch("/api/sessions/st-3", json={"end_reason": "done"}).status_code == 200
    assert srv.client.delete("/api/sessions/st-4").status_code == 200
    assert srv.stop(sig) == 0
    wal = home / "state.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed into the main file
    conn = sqlite3.connect(f"file:{home / 'state.db'}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 19
    finally:
        conn.close()
    again = start_server(home)
    try:
        assert len(again.client.get("/api/sessions?limit=200").json()["data"]) == 19
        assert again.client.get("/api/sessions/st-3").json()["session"]["end_reason"] == "done"
    finally:
        again.stop()


def test_in_flight_request_finishes_during_shutdown(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    srv = start_server(home)
    srv.client.get("/api/sessions")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.putrequest("POST", "/api/sessions")
    conn.putheader("Authorization", f"Bearer {KEY}")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    first = b'{"id": "st-inflight",'
    conn.send(b"%x\r\n%s\r\n" % (len(first), first))
    time.sleep(0.2)
    srv.process.send_signal(signal.SIGTERM)  # while the body is still arriving
    time.sleep(0.3)
    rest = b' "title": "made it"}'
    conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
    resp = conn.getresponse()
    assert (resp.status, json.loads(resp.read())["session"]["title"]) == (201, "made it")
    conn.close()
    assert srv.process.wait(15) == 0
    srv.client.close()
    assert sql(home / "state.db", "SELECT title FROM sessions WHERE id = 'st-inflight'") == [("made it",)]


# -- upstream reads and writes what we wrote --------------------------------------------

UPSTREAM_SCRIPT = r"""
import json, os, sys
from pathlib import Path
home = Path(sys.argv[1])
os.environ["HERMES_HOME"] = str(home)
from hermes_state import SessionDB
db = SessionDB(db_path=home / "state.db")
out = {
    "session": db.get_session("ours"),
    "messages": [(m["role"], m["content"]) for m in db.get_messages("ours-fork")],
    "listed": [s["id"] for s in db.list_sessions_rich(limit=10, order_by_last_active=True)],
    "title": db.get_session_title("ours"),
}
db.create_session("theirs", "cli", model="mock-model")
db.append_message("theirs", "user", "written by upstream")
db.append_message("theirs", "assistant", [{"type": "text", "text": "structured"}])
db.set_session_title("theirs", "their title")
db.close()
print(json.dumps(out))
"""


def test_upstream_sessiondb_reads_and_writes_our_state_db(fresh_server: RunningServer) -> None:
    upstream_python = upstream_bin("python")
    c = fresh_server.client
    assert c.post("/api/sessions", json={"id": "ours", "title": "our title", "system_prompt": "sp"}).status_code == 201
    conn = sqlite3.connect(fresh_server.db_path)
    with conn:
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('ours', 'user', 'hello', 1)")
        conn.execute("UPDATE sessions SET message_count = 1 WHERE id = 'ours'")
    conn.close()
    assert c.post("/api/sessions/ours/fork", json={"id": "ours-fork", "title": "forked"}).status_code == 201
    schema_before = make_fixtures.schema_text(fresh_server.db_path)

    out = subprocess.run([str(upstream_python), "-c", UPSTREAM_SCRIPT, str(fresh_server.home)],
                         capture_output=True, text=True, timeout=120, env=clean_env())
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert (seen["session"]["id"], seen["session"]["title"], seen["session"]["system_prompt"]) == ("ours", "our title", "sp")
    assert seen["messages"] == [["user", "hello"]]
    assert set(seen["listed"]) == {"ours", "ours-fork"}
    assert make_fixtures.schema_text(fresh_server.db_path) == schema_before  # upstream changed no schema object

    theirs = c.get("/api/sessions/theirs").json()["session"]
    assert (theirs["source"], theirs["title"], theirs["message_count"], theirs["model"]) == (
        "cli", "their title", 2, "mock-model")
    assert [m["content"] for m in c.get("/api/sessions/theirs/messages").json()["data"]] == [
        "written by upstream", [{"type": "text", "text": "structured"}]]
    assert [r["id"] for r in c.get("/api/sessions?source=cli").json()["data"]] == ["theirs"]
    assert c.post("/api/sessions", json={"id": "after", "title": "their title"}).json() == error(
        "invalid_title", "Title already in use by session theirs")
