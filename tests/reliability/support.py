"""What every reliability test checks after its fault: the file, the lineage, the log.

The database is read with a separate read-only SQLite connection, as another
process would, so nothing here goes through the server's own code.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, Iterable

import httpx

from tests.server import RunningServer

# A Python traceback, or a record at ERROR/CRITICAL level, in the server's log.
_TROUBLE = re.compile(r"Traceback \(most recent call last\)|\b(ERROR|CRITICAL)\b")


def query(db_path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of one statement, read through a fresh read-only connection."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def integrity(db_path: Path) -> str:
    """`PRAGMA integrity_check` as one string ('ok' when the file is sound)."""
    return "; ".join(row[0] for row in query(db_path, "PRAGMA integrity_check"))


def lineage_problems(db_path: Path) -> list[str]:
    """Broken invariants of the stored rows: orphans, counters that disagree with rows."""
    problems = []
    orphans = query(db_path, "SELECT DISTINCT m.session_id FROM messages m"
                             " LEFT JOIN sessions s ON s.id = m.session_id WHERE s.id IS NULL")
    if orphans:
        problems.append(f"messages without a session: {orphans}")
    dangling = query(db_path, "SELECT c.id, c.parent_session_id FROM sessions c LEFT JOIN sessions p"
                              " ON p.id = c.parent_session_id WHERE c.parent_session_id IS NOT NULL AND p.id IS NULL")
    if dangling:
        problems.append(f"children of missing parents: {dangling}")
    counters = query(db_path, "SELECT s.id, s.message_count, (SELECT COUNT(*) FROM messages m"
                              " WHERE m.session_id = s.id) AS n FROM sessions s WHERE s.message_count != n")
    if counters:
        problems.append(f"message_count differs from the rows: {counters}")
    fts = query(db_path, "SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM messages_fts),"
                         " (SELECT COUNT(*) FROM messages_fts_trigram)")[0]
    if len(set(fts)) != 1:
        problems.append(f"full-text indexes out of step with messages (messages, fts, trigram): {fts}")
    return problems


def log_trouble(server: RunningServer) -> list[str]:
    """Log lines that carry a traceback or an ERROR record."""
    return [line for line in server.log().splitlines() if _TROUBLE.search(line)]


def missing_sessions(db_path: Path, ids: Iterable[str]) -> list[str]:
    """The ids among `ids` that have no session row (every acknowledged create must have one)."""
    wanted = list(ids)
    present = {row[0] for row in query(db_path, "SELECT id FROM sessions")}
    return [sid for sid in wanted if sid not in present]


def envelope_problem(response: httpx.Response, status: int, code: str | None) -> str | None:
    """Why `response` is not `status` with the standard envelope carrying `code`, or None."""
    if response.status_code != status:
        return f"status {response.status_code}, not {status}: {response.text[:200]}"
    if not response.headers.get("content-type", "").startswith("application/json"):
        return f"content-type {response.headers.get('content-type')!r}: {response.text[:200]}"
    error = response.json().get("error")
    if not isinstance(error, dict) or set(error) != {"message", "type", "param", "code"}:
        return f"not the standard envelope: {response.text[:200]}"
    if error["code"] != code:
        return f"code {error['code']!r}, not {code!r}"
    return None


def assert_sound(server: RunningServer, acknowledged: Iterable[str] = ()) -> None:
    """After a fault: integrity ok, lineage invariants hold, every acknowledged session is
    present, and the log has no traceback or ERROR record."""
    assert integrity(server.db_path) == "ok"
    assert lineage_problems(server.db_path) == []
    assert missing_sessions(server.db_path, acknowledged) == []
    assert log_trouble(server) == []
