"""The storage probe behind `GET /health/detailed`."""

from __future__ import annotations

import sqlite3


def ping(conn: sqlite3.Connection) -> None:
    """Read one row of the schema: fails when state.db is unreadable or corrupt."""
    conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchone()
