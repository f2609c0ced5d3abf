"""Benchmark datasets: N sessions × 20 messages, with compression chains and forks.

Rows are written straight into a state.db with one sqlite3 connection: going
through the HTTP API would take longer than the benchmark itself at 100k
sessions. The file is first created by the server that will read it
(`hermes_server.store.migrate` for hermes-server, upstream's own
`hermes_state.SessionDB` for the oracle), so each side runs over a schema it
made; the rows are the same on both.

Shape (deterministic; every id and timestamp is a function of the index):
- out of every 50 rows, 3 form a compression chain root → mid → tip (each
  ended `compression` but the tip, titled `Topic N`, `Topic N #2`, `Topic N #3`);
- 2 form a fork: a source ended `branched` and a child started just after
  with a copy of the source's messages (the legacy branch heuristic upstream
  and hermes-server both recognise);
- the rest are plain `api_server` sessions (every third titled, every
  twentieth from `cli`).
Sessions start 30 s apart; their messages follow one second apart.

The FTS triggers are dropped during the bulk insert and the two FTS tables are
filled in one statement each afterwards (then optimised, as an index grown by
small writes would be), and the triggers are recreated from their saved SQL, so
the schema is byte-identical and the indexes consistent.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from hermes_server.store import migrate

# Bump when the shape changes, so cached files are rebuilt.
DATASET_VERSION = 4
MESSAGES_PER_SESSION = 20
T0 = 1_700_000_000.0
SESSION_SPACING = 30.0
DATA_DIR = Path(__file__).resolve().parent / "data"
ORACLE_VENV = Path("/tmp/hermes-oracle-venv")

_SESSION_COLUMNS = (
    "id, source, model, model_config, system_prompt, parent_session_id, started_at, ended_at, end_reason,"
    " message_count, tool_call_count, input_tokens, output_tokens, title, api_call_count"
)
_MESSAGE_COLUMNS = "session_id, role, content, timestamp, token_count, finish_reason"
_FTS_TEXT = "COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, '')"


def session_id(index: int) -> str:
    """The id of row `index`: sortable, distinct from anything a benchmark creates."""
    return f"bench_{index:06d}"


def _messages(sid: str, start: float, index: int) -> Iterator[tuple]:
    for j in range(MESSAGES_PER_SESSION):
        ts = start + 1.0 + j
        if j % 2 == 0:
            yield (sid, "user", f"Question {j // 2} of session {index}: how do I configure item {index % 97}?",
                   ts, None, None)
        else:
            yield (sid, "assistant", f"Answer {j // 2} for session {index}: set option {index % 13} to "
                   f"{j} and restart the worker.", ts, 24, "stop")


def _session(index: int, *, start: float, title: str | None = None, parent: str | None = None,
             ended: float | None = None, reason: str | None = None, source: str = "api_server") -> tuple:
    return (session_id(index), source, "hermes-agent", None, "You are a helpful assistant.", parent,
            start, ended, reason, MESSAGES_PER_SESSION, 0, 200 + index % 50, 120 + index % 30, title, 10)


def rows(count: int) -> Iterator[tuple[tuple, list[tuple]]]:
    """(session row, its messages) for `count` sessions, in index order."""
    for index in range(count):
        start = T0 + index * SESSION_SPACING
        last = start + MESSAGES_PER_SESSION
        slot = index % 50
        if index - slot + 5 > count:
            slot = 50  # the chain/fork group would be cut off by `count`: a plain row
        sid = session_id(index)
        if slot in (0, 1):
            # compression root or mid: ended when its last message was written
            chain = index - slot
            title = f"Topic {chain}" + ("" if slot == 0 else " #2")
            parent = None if slot == 0 else session_id(index - 1)
            row = _session(index, start=start, title=title, parent=parent, ended=last, reason="compression")
            yield row, list(_messages(sid, start, index))
        elif slot == 2:
            row = _session(index, start=start, title=f"Topic {index - 2} #3", parent=session_id(index - 1))
            yield row, list(_messages(sid, start, index))
        elif slot == 3:
            fork_at = start + 25.0
            row = _session(index, start=start, title=f"Source {index}", ended=fork_at, reason="branched")
            yield row, list(_messages(sid, start, index))
        elif slot == 4:
            source_start = start - SESSION_SPACING
            fork_at = source_start + 25.0
            row = _session(index, start=fork_at + 0.01, title=f"Source {index - 1} #2", parent=session_id(index - 1))
            copied = [(sid, *m[1:]) for m in _messages(session_id(index - 1), source_start, index - 1)]
            yield row, copied
        else:
            title = f"Session {index}" if index % 3 == 0 else None
            source = "cli" if index % 20 == 5 else "api_server"
            yield _session(index, start=start, title=title, source=source), list(_messages(sid, start, index))


def fill(path: Path, count: int) -> None:
    """Bulk-insert the dataset into an existing, empty v22 state.db."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
        ).fetchall()
        conn.execute("BEGIN")
        for name, _ in triggers:
            conn.execute(f'DROP TRIGGER "{name}"')
        holes = ", ".join("?" * 15)
        batch_s: list[tuple] = []
        batch_m: list[tuple] = []
        for session, messages in rows(count):
            batch_s.append(session)
            batch_m.extend(messages)
            if len(batch_s) >= 2000:
                conn.executemany(f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({holes})", batch_s)
                conn.executemany(f"INSERT INTO messages ({_MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", batch_m)
                batch_s, batch_m = [], []
        if batch_s:
            conn.executemany(f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({holes})", batch_s)
            conn.executemany(f"INSERT INTO messages ({_MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", batch_m)
        for table in ("messages_fts", "messages_fts_trigram"):
            conn.execute(f"INSERT INTO {table}(rowid, content) SELECT id, {_FTS_TEXT} FROM messages")
            # One bulk insert leaves dozens of unmerged segments, and every later write would pay
            # for merging them (60 ms to append 20 messages at 10k sessions). A state.db grown
            # by small transactions keeps its segments merged as it goes; so does this one.
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        for _, sql in triggers:
            conn.execute(sql)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _create_with_migrate(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        migrate.prepare(conn, path)
    finally:
        conn.close()


def _create_with_upstream(path: Path, venv: Path) -> None:
    """Let upstream's SessionDB lay out the file, in the oracle's own interpreter."""
    code = (
        "import sys; from pathlib import Path; from hermes_state import SessionDB; "
        "SessionDB(db_path=Path(sys.argv[1])).close()"
    )
    env = {"HERMES_HOME": str(path.parent), "PATH": "/usr/bin:/bin"}
    subprocess.run([str(venv / "bin" / "python"), "-c", code, str(path)], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def cached(count: int, flavour: str = "hermes-server", venv: Path = ORACLE_VENV) -> Path:
    """Path of the cached state.db for `count` sessions, built on first use.

    `flavour` is `hermes-server` (schema from our migrations) or `upstream`
    (schema from the oracle's SessionDB). Callers copy the file before writing to it.
    """
    target = DATA_DIR / f"v{DATASET_VERSION}-{count}" / flavour / "state.db"
    if target.is_file():
        return target
    building = target.parent.with_name(flavour + ".building")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    path = building / "state.db"
    started = time.monotonic()
    if flavour == "upstream":
        _create_with_upstream(path, venv)
    else:
        _create_with_migrate(path)
    fill(path, count)
    if flavour == "hermes-server":
        # our own indexes, so the first server start does not build them
        conn = sqlite3.connect(path, isolation_level=None)
        for statement in migrate.HS_INDEXES:
            conn.execute(statement)
        conn.close()
    shutil.rmtree(target.parent, ignore_errors=True)
    building.rename(target.parent)
    print(f"dataset: built {count} sessions ({flavour}) in {time.monotonic() - started:.1f}s "
          f"({target.stat().st_size / 1e6:.0f} MB)", file=sys.stderr, flush=True)
    return target


def copy_to(source: Path, home: Path) -> Path:
    """Copy a cached state.db into a fresh HERMES_HOME (the benchmark writes to it).

    The copy is flushed to disk before a server opens it: otherwise the first fsync a
    server makes (its first WAL checkpoint) writes out the whole fresh copy, over 100 MB
    at 10k sessions, and one request of the measured run pays for the benchmark's copy.
    """
    home.mkdir(parents=True, exist_ok=True)
    dest = home / "state.db"
    shutil.copyfile(source, dest)
    with open(dest, "rb") as copied:
        os.fsync(copied.fileno())
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build (and cache) benchmark datasets.")
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10_000, 100_000])
    parser.add_argument("--upstream", action="store_true", help="also build the upstream-created copy")
    args = parser.parse_args(argv)
    for size in args.sizes:
        print(cached(size))
        if args.upstream:
            print(cached(size, "upstream"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
