"""Bulk writes for fixtures: empty the session state, look up conflicts, insert rows.

`SessionRows` is state.db's part of the server's state (state.py): a reset empties it.

Run inside one `Database.write` transaction by hermes_server/testing/load.py, so
a fixture lands completely or not at all. Column names come from the fixture
model's fixed lists and are checked against the live table before use.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_server.store.db import Database

# Tables that hold session state (as opposed to schema_version and state_meta),
# children before parents so foreign keys hold while deleting.
SESSION_STATE_TABLES = (
    "messages", "session_model_usage", "compression_locks", "async_delegations", "gateway_routing",
)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def clear_state(conn: sqlite3.Connection) -> None:
    """Delete every session and everything hanging off it; message ids restart at 1."""
    for table in SESSION_STATE_TABLES:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IS NOT NULL")
    conn.execute("DELETE FROM sessions")
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'messages'")


class SessionRows:
    """state.db's sessions and everything hanging off them, as a registered part of the
    server's state: a reset empties them in one transaction, as `clear_state` does."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def reset(self) -> None:
        await self.db.write(clear_state)


def existing_ids(conn: sqlite3.Connection, ids: Iterable[str]) -> set[str]:
    """Which of `ids` are already rows."""
    found: set[str] = set()
    for session_id in ids:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
            found.add(session_id)
    return found


def title_holders(conn: sqlite3.Connection, titles: Iterable[str]) -> dict[str, str]:
    """title → id of the row already carrying it."""
    holders: dict[str, str] = {}
    for title in titles:
        row = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
        if row:
            holders[title] = row[0]
    return holders


def end_reason(conn: sqlite3.Connection, session_id: str) -> str | None:
    row = conn.execute("SELECT end_reason FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return row[0] if row else None


def insert_rows(conn: sqlite3.Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert rows that share one column set (the fixture model always produces one)."""
    if not rows:
        return
    names = list(rows[0])
    unknown = set(names) - _columns(conn, table)
    if unknown:
        raise ValueError(f"no such {table} column(s): {', '.join(sorted(unknown))}")
    holes = ", ".join("?" * len(names))
    conn.executemany(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({holes})",
        [tuple(row[name] for name in names) for row in rows],
    )


def counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(sessions, messages) now in the database."""
    sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    messages = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    return sessions, messages


def foreign_sources(conn: sqlite3.Connection, keep: Iterable[str]) -> dict[str, int]:
    """Sessions the API server did not write (source other than api_server), by source, ids in `keep` aside."""
    kept = set(keep)
    found: dict[str, int] = {}
    for session_id, source in conn.execute("SELECT id, source FROM sessions WHERE source IS NOT 'api_server'"):
        if session_id not in kept:
            found[source or "none"] = found.get(source or "none", 0) + 1
    return found
