"""Create a fresh state.db from `migrations/*.sql`, or check that an existing one is v22.

Upstream migrates old databases on open; we do not. A file at any other schema
version is refused and left untouched, so real Hermes can migrate it itself.
The only objects hermes-server adds to a database it did not create are its own
`hs_*` indexes, created idempotently.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_server.store.errors import SchemaMismatch

SCHEMA_VERSION = 22

# Indexes hermes-server needs for page-sized list queries; harmless to Hermes.
HS_INDEXES = (
    "CREATE INDEX IF NOT EXISTS hs_messages_timestamp ON messages(timestamp DESC, session_id)",
    "CREATE INDEX IF NOT EXISTS hs_sessions_title_nocase ON sessions(title COLLATE NOCASE) "
    "WHERE title IS NOT NULL",
)


def migrations_dir() -> Path:
    """Installed wheels carry the SQL inside the package; a source checkout keeps it at the top."""
    packaged = Path(__file__).resolve().parent.parent / "migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "migrations"


def migration_files() -> list[Path]:
    """Numbered SQL files in application order."""
    return sorted(migrations_dir().glob("[0-9][0-9][0-9][0-9]_*.sql"))


def _user_tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {row[0] for row in rows}


def check_version(conn: sqlite3.Connection, path: Path) -> None:
    """Raise SchemaMismatch unless the existing database says schema version 22."""
    if "schema_version" not in _user_tables(conn):
        raise SchemaMismatch(
            f"{path} is not a Hermes state.db (no schema_version table). "
            "Point --home/HERMES_HOME at a Hermes home or at an empty directory."
        )
    row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    version = row[0] if row else None
    if version != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"{path} is at Hermes schema version {version}; hermes-server speaks only "
            f"version {SCHEMA_VERSION} (hermes-agent 0.19.0). Open it once with "
            "hermes-agent 0.19.0 to migrate it, or use a fresh HERMES_HOME. The file was not changed."
        )


def prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Bring a freshly opened writer connection to a usable v22 database.

    A brand-new (table-less) file gets every migration in one transaction; an
    existing file is only version-checked before anything is written to it.
    """
    if not _user_tables(conn):
        conn.execute("PRAGMA journal_mode=WAL")
        script = "\n".join(f.read_text(encoding="utf-8") for f in migration_files())
        conn.executescript("BEGIN IMMEDIATE;\n" + script + "\nCOMMIT;")
    else:
        check_version(conn, path)
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
    for statement in HS_INDEXES:
        conn.execute(statement)


def check_existing(path: Path) -> None:
    """Refuse early (before serving) a state.db at another schema version; never writes."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        check_version(conn, path)
    except sqlite3.Error:
        return  # unreadable right now: the lazy open answers 503 and keeps retrying
    finally:
        conn.close()
