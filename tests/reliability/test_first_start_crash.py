"""A process killed while it first creates a file in HERMES_HOME: the next start must work.

Each case kills a real Python process with SIGKILL at one moment of a first creation, found
by SQLite's statement trace inside the real code (`Database.ensure_open` and the migration,
the response and run-key stores), so the files are exactly what such a death leaves; then a
real `hermes-server serve` starts on that home.

- state.db cut off before the WAL switch (0 bytes), after it (a blank page with the WAL
  header), or inside the schema transaction (that page and a -wal): served, created afresh.
  Before the fix the last two were refused with exit 2, "not a Hermes state.db".
- a first creation in rollback-journal mode, its pages partly in state.db beside a hot
  -journal: served afresh (it was read as immutable, journal ignored: "not an SQLite database").
- a Hermes home (rollback-journal mode) with a hot journal of a transaction that set schema
  version 31 and deleted every session: judged by its last commit, served with every session
  (it was refused as version 31). A foreign SQLite file with a hot journal is still refused.
- `serve --fixture` on a blank state.db refuses a bad fixture before serving, as on a fresh home.
- response_store.db and runs_idempotency.db killed inside their creation open again, durable.
- hermes-server.key killed between creating the file and writing the key: the next start
  generates and keeps a key (an empty key file made every later start exit 2).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from hermes_server.cli.keyfile import KEY_FILE
from tests.support.db import integrity
from tests.support.server import clean_env, free_port, generated_key, serve_without_key, start_server, stop_process

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)

# Runs argv[2] (Python) with argv[3] as `path`, and SIGKILLs itself the moment SQLite starts the
# first statement that begins with argv[1] on any connection the code opens.
_KILLED_AT = """
import os, signal, sqlite3, sys
from pathlib import Path
statement, code, path = sys.argv[1].upper(), sys.argv[2], Path(sys.argv[3])
real_connect = sqlite3.connect

def die_at(sql):
    if " ".join(sql.split()).upper().startswith(statement):
        os.kill(os.getpid(), signal.SIGKILL)

def connect(*args, **kwargs):
    conn = real_connect(*args, **kwargs)
    conn.set_trace_callback(die_at)
    return conn

sqlite3.connect = connect
exec(code)
raise SystemExit("the statement never ran, so nothing was killed: " + statement)
"""

# The server's own first open of state.db: db.connect, then the migration (store/migrate.py).
OPEN_STATE_DB = "import asyncio\nfrom hermes_server.store.db import Database\nasyncio.run(Database(path).ensure_open())"
# The same schema created in rollback-journal mode with a one-page cache, so that pages spill
# into state.db before the commit: what any SQLite client's cut-off first creation leaves.
CREATE_IN_ROLLBACK_MODE = (
    "from hermes_server.store.migrate import schema_script\n"
    "conn = sqlite3.connect(path, isolation_level=None)\n"
    "conn.execute('PRAGMA cache_size=1')\n"
    "conn.executescript('BEGIN IMMEDIATE;\\n' + schema_script() + '\\nCOMMIT;')"
)


def killed_at(statement: str, code: str, path: Path) -> None:
    """Run `code` in a child and let it die by SIGKILL when `statement` starts."""
    done = subprocess.run([sys.executable, "-c", _KILLED_AT, statement, code, str(path)],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == -signal.SIGKILL, done.stderr


def spill_and_die(path: Path, *statements: str) -> None:
    """One rollback-journal transaction of `statements`, its pages spilled into the file, cut off
    by SIGKILL before its COMMIT: the file and a hot -journal, as a crash leaves them."""
    script = "BEGIN IMMEDIATE;\n" + ";\n".join(statements) + ";\nCOMMIT;"
    code = ("conn = sqlite3.connect(path, isolation_level=None)\nconn.execute('PRAGMA cache_size=1')\n"
            f"conn.executescript({script!r})")
    killed_at("COMMIT", code, path)
    assert path.stat().st_size > 0 and path.with_name(path.name + "-journal").stat().st_size > 0


def serve(home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """A `serve` that is expected to refuse (it returns before binding)."""
    return subprocess.run([sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--port",
                           str(free_port()), *extra], capture_output=True, text=True, timeout=60, env=clean_env())


def assert_created_afresh(home: Path) -> None:
    server = start_server(home)
    try:
        assert server.client.get("/api/sessions").json()["data"] == []
        assert server.client.post("/api/sessions", json={"id": "after-the-crash"}).status_code == 201
    finally:
        server.stop()
    db = home / "state.db"
    assert make_fixtures.schema_text(db) == (FIXTURES / "upstream_schema.sql").read_text(encoding="utf-8")
    assert integrity(db) == "ok"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600  # made as a fresh state.db is


@pytest.mark.parametrize(("statement", "left"), [
    ("PRAGMA journal_mode=WAL", ["state.db"]),  # an empty file (this one always worked)
    ("BEGIN IMMEDIATE", ["state.db"]),  # one blank page carrying the WAL header
    ("COMMIT", ["state.db", "state.db-shm", "state.db-wal"]),  # the schema written but not committed
])
def test_a_state_db_cut_off_in_its_creation_is_created_afresh(tmp_path: Path, statement: str,
                                                             left: list[str]) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    killed_at(statement, OPEN_STATE_DB, home / "state.db")
    assert sorted(p.name for p in home.iterdir()) == left
    assert (home / "state.db").stat().st_size == (0 if statement.startswith("PRAGMA") else 4096)
    assert_created_afresh(home)


def test_a_creation_cut_off_beside_a_hot_journal_is_rolled_back_and_created_afresh(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    killed_at("COMMIT", CREATE_IN_ROLLBACK_MODE, home / "state.db")
    assert (home / "state.db").stat().st_size > 0 and (home / "state.db-journal").stat().st_size > 0
    assert_created_afresh(home)
    assert not (home / "state.db-journal").exists()


def test_a_hermes_home_with_a_hot_journal_is_judged_by_its_last_commit(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    db = home / "state.db"
    shutil.copyfile(FIXTURES / "seed_state.db", db)
    with closing(sqlite3.connect(db)) as conn:  # a home some SQLite client left in rollback-journal mode
        conn.execute("PRAGMA journal_mode=DELETE")
        committed = conn.execute("SELECT id FROM sessions ORDER BY id").fetchall()
    spill_and_die(db, "UPDATE schema_version SET version = 31", "DELETE FROM messages", "DELETE FROM sessions")
    # The half-written pages are in the file: read past the journal, it looks like version 31.
    with closing(sqlite3.connect(f"{db.as_uri()}?immutable=1", uri=True)) as peek:
        assert peek.execute("SELECT version FROM schema_version").fetchall() == [(31,)]
    server = start_server(home)
    try:
        assert server.client.get(f"/api/sessions/{committed[0][0]}").status_code == 200
    finally:
        server.stop()
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(22,)]
        assert conn.execute("SELECT id FROM sessions ORDER BY id").fetchall() == committed


def test_a_foreign_sqlite_file_with_a_hot_journal_is_still_refused_and_keeps_its_rows(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    db = home / "state.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.executemany("INSERT INTO notes VALUES (?)", [(f"note {i} " * 40,) for i in range(300)])
        conn.commit()
    spill_and_die(db, "DELETE FROM notes", "DROP TABLE notes")
    out = serve(home, "--no-auth")
    assert out.returncode == 2, out.stderr
    assert "is not a Hermes state.db (it has no schema_version table)" in out.stderr
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM notes").fetchone() == (300,)


def test_a_bad_fixture_on_a_blank_state_db_is_refused_before_serving(tmp_path: Path) -> None:
    """As on a fresh home (tests/api/test_newcomer_start.py); the blank file once read as a file
    without tables, so the check passed and the start failed after "serving" (exit 3)."""
    home = tmp_path / "hermes"
    home.mkdir()
    killed_at("BEGIN IMMEDIATE", OPEN_STATE_DB, home / "state.db")
    fixture = tmp_path / "f.json"
    fixture.write_text(json.dumps({"sessions": [{"id": "b", "parent": "zzz"}]}))
    out = serve(home, "--fixture", str(fixture))
    assert out.returncode == 2, out.stderr
    assert "$.sessions[0].parent: unknown parent 'zzz'" in out.stderr
    assert "serving http://" not in out.stdout + out.stderr
    assert not (home / KEY_FILE).exists()  # refused before anything is kept


@pytest.mark.parametrize(("name", "statement", "code"), [
    ("response_store.db", "CREATE TABLE IF NOT EXISTS conversations",
     "from hermes_server.store.responses import ResponseStore\nResponseStore(path)"),
    ("runs_idempotency.db", "CREATE UNIQUE INDEX",
     "from hermes_server.store.runs_idempotency import RunKeyStore\nRunKeyStore(path)"),
])
def test_a_side_store_cut_off_in_its_creation_opens_again(tmp_path: Path, name: str, statement: str,
                                                        code: str) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    killed_at(statement, code, home / name)
    server = start_server(home, "--hermes-version", "0.21.2")
    try:
        features = server.client.get("/v1/capabilities").json()["features"]
        assert features["runs_idempotency"]["durable"] is True
        assert "cannot be opened" not in server.log()
    finally:
        server.stop()
    tables = {"response_store.db": {"responses", "conversations"}, "runs_idempotency.db": {"run_idempotency"}}
    for file, wanted in tables.items():
        with closing(sqlite3.connect(home / file)) as conn:
            assert wanted <= {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert stat.S_IMODE((home / file).stat().st_mode) == 0o600


# Dies the moment the key is about to be written into the file it just created.
KEEP_KEY = """
import os, signal, sys
from pathlib import Path
from hermes_server.cli import keyfile

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

os.fdopen = die  # the key is written through the descriptor of the file just created
keyfile.stored_key(Path(sys.argv[1]))
raise SystemExit("the key was never written")
"""


def test_a_start_killed_while_keeping_its_key_leaves_no_empty_key_file(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    done = subprocess.run([sys.executable, "-c", KEEP_KEY, str(home)], capture_output=True, text=True,
                          timeout=60, env=clean_env())
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert not (home / KEY_FILE).exists()
    proc, url, log = serve_without_key(home, tmp_path)
    try:
        key = generated_key(log.read_text())
        assert (home / KEY_FILE).read_text() == key + "\n"
        assert httpx.get(url + "/api/sessions", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    finally:
        stop_process(proc)
