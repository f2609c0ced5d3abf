"""state.db from outside the server: rows written and read as another Hermes process would.

Plain SQL on fresh connections, so nothing here goes through the server's own code:
the server caches nothing, so the next request sees rows written here, and the
readers show columns the API never does. `integrity` and `lineage_problems` are
what every reliability test checks after its fault.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest


def sql(db_path: Path, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of one statement, on a fresh connection of its own, as another process would run it."""
    conn = connect(db_path)
    try:
        return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


def integrity(db_path: Path) -> str:
    """`PRAGMA integrity_check` as one string ('ok' when the file is sound)."""
    return "; ".join(row[0] for row in sql(db_path, "PRAGMA integrity_check"))


def lineage_problems(db_path: Path) -> list[str]:
    """Broken invariants of the stored rows: orphans, counters that disagree with rows."""
    problems = []
    orphans = sql(db_path, "SELECT DISTINCT m.session_id FROM messages m"
                             " LEFT JOIN sessions s ON s.id = m.session_id WHERE s.id IS NULL")
    if orphans:
        problems.append(f"messages without a session: {orphans}")
    dangling = sql(db_path, "SELECT c.id, c.parent_session_id FROM sessions c LEFT JOIN sessions p"
                              " ON p.id = c.parent_session_id WHERE c.parent_session_id IS NOT NULL AND p.id IS NULL")
    if dangling:
        problems.append(f"children of missing parents: {dangling}")
    counters = sql(db_path, "SELECT s.id, s.message_count, (SELECT COUNT(*) FROM messages m"
                              " WHERE m.session_id = s.id) AS n FROM sessions s WHERE s.message_count != n")
    if counters:
        problems.append(f"message_count differs from the rows: {counters}")
    fts = sql(db_path, "SELECT (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM messages_fts),"
                         " (SELECT COUNT(*) FROM messages_fts_trigram)")[0]
    if len(set(fts)) != 1:
        problems.append(f"full-text indexes out of step with messages (messages, fts, trigram): {fts}")
    return problems


@pytest.fixture(autouse=True)
def database_opened(request: pytest.FixtureRequest) -> None:
    """The server opens state.db lazily: make it do so before a test writes rows into it.

    Import this into a test module to make it autouse there.
    """
    for name in ("server", "fresh_server"):
        if name in request.fixturenames:
            request.getfixturevalue(name).client.get("/api/sessions?limit=0")


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=10, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def insert_session(
    db_path: Path,
    session_id: str,
    *,
    source: str = "api_server",
    started_at: float | None = None,
    parent: str | None = None,
    end_reason: str | None = None,
    ended_at: float | None = None,
    model_config: dict[str, Any] | str | None = None,
    archived: int = 0,
    title: str | None = None,
    model: str | None = "mock-model",
    system_prompt: str | None = None,
    **columns: Any,
) -> None:
    """A sessions row as another Hermes process would write it."""
    if isinstance(model_config, dict):
        model_config = json.dumps(model_config)
    values = {
        "id": session_id, "source": source, "started_at": time.time() if started_at is None else started_at,
        "parent_session_id": parent, "end_reason": end_reason,
        "ended_at": ended_at if ended_at is not None or end_reason is None else time.time(),
        "model_config": model_config, "archived": archived, "title": title, "model": model,
        "system_prompt": system_prompt, **columns,
    }
    names = ", ".join(values)
    conn = connect(db_path)
    try:
        conn.execute(f"INSERT INTO sessions ({names}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
    finally:
        conn.close()


def insert_message(
    db_path: Path,
    session_id: str,
    role: str,
    content: Any,
    timestamp: float,
    *,
    active: int = 1,
    count: bool = True,
    **columns: Any,
) -> int:
    """A messages row (lists/dicts stored behind upstream's NUL+`json:` sentinel); bumps message_count."""
    if isinstance(content, (list, dict)):
        content = "\x00json:" + json.dumps(content)
    if isinstance(columns.get("tool_calls"), list):
        columns["tool_calls"] = json.dumps(columns["tool_calls"])
    values = {"session_id": session_id, "role": role, "content": content, "timestamp": timestamp,
              "active": active, **columns}
    conn = connect(db_path)
    try:
        cur = conn.execute(
            f"INSERT INTO messages ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
            list(values.values()),
        )
        if count:
            conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (session_id,))
        return int(cur.lastrowid)
    finally:
        conn.close()


def session_row(db_path: Path, session_id: str) -> dict[str, Any]:
    """The whole sessions row, every column (including those the API never shows)."""
    conn = connect(db_path)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone())
    finally:
        conn.close()


def unique(prefix: str) -> Callable[[str], str]:
    """Id maker for tests sharing a module server: unique(tag)('x') -> 'tag-x'."""
    return lambda name: f"{prefix}-{name}"


def missing_sessions(db_path: Path, ids: Iterable[str]) -> list[str]:
    """The ids among `ids` that have no session row (every acknowledged create must have one)."""
    present = {row[0] for row in sql(db_path, "SELECT id FROM sessions")}
    return [sid for sid in ids if sid not in present]
