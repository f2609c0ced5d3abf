"""Create a fresh state.db from `migrations/*.sql`, or check that an existing one is v22.

Upstream migrates old databases on open; we do not. A file at any other schema
version is refused and left untouched, so real Hermes can migrate it itself.
The only objects hermes-server adds to a database it did not create are its own
`hs_*` indexes, created idempotently.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_server.domain.errors import SchemaMismatch

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


def schema_script() -> str:
    """Every migration as one SQL script: what a fresh state.db is made of."""
    return "\n".join(f.read_text(encoding="utf-8") for f in migration_files())


def empty_database() -> sqlite3.Connection:
    """An in-memory v22 database with no rows: what a fresh home's state.db will hold, so that
    a fixture can be checked against it before anything is created or bound."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(schema_script())
    return conn


def _user_tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {row[0] for row in rows}


def check_version(conn: sqlite3.Connection, path: Path) -> None:
    """Raise SchemaMismatch, saying what to do, unless the existing database says schema version 22."""
    untouched = "The file was not changed."
    if "schema_version" not in _user_tables(conn):
        raise SchemaMismatch(
            f"{path} is not a Hermes state.db (it has no schema_version table). "
            f"Point --home/HERMES_HOME at a Hermes home or at an empty directory. {untouched}"
        )
    row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    version = row[0] if row else None
    if version == SCHEMA_VERSION:
        return
    if isinstance(version, int) and version > SCHEMA_VERSION:
        advice = (f"It was written by a Hermes newer than hermes-agent 0.19.0 (schema version {SCHEMA_VERSION}), "
                  "which is what hermes-server reproduces; use a HERMES_HOME of hermes-agent 0.19.0 or an empty one.")
    else:
        # Only a command that opens state.db migrates it (`hermes --version` does not).
        advice = ("Open it once with hermes-agent 0.19.0, which migrates it to "
                  f"version {SCHEMA_VERSION}: run `hermes sessions list` with HERMES_HOME set to this home. "
                  "Or use an empty HERMES_HOME.")
    raise SchemaMismatch(
        f"{path} is at Hermes schema version {version}; hermes-server serves only version "
        f"{SCHEMA_VERSION}. {advice} {untouched}"
    )


def restrict_mode(path: Path) -> None:
    """Make a state.db we are creating readable by its owner only (0600), like the key file and
    response_store.db: it holds every conversation. SQLite gives the -wal and -shm it creates
    later the main file's mode, so this is done before WAL is switched on. A file that already
    held tables is Hermes's or the user's, and keeps its mode."""
    try:
        path.chmod(0o600)
    except OSError:
        pass  # a filesystem without modes (some mounts): the database still works


def prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Bring a freshly opened writer connection to a usable v22 database.

    A brand-new (table-less) file gets every migration in one transaction; an
    existing file is only version-checked before anything is written to it.
    """
    if not _user_tables(conn):
        restrict_mode(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript("BEGIN IMMEDIATE;\n" + schema_script() + "\nCOMMIT;")
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
    # A read-only connection still creates -wal/-shm beside a WAL database and cannot remove
    # them. When there is no -wal, everything is in the main file: read it as immutable,
    # which touches nothing else.
    has_wal = path.with_name(path.name + "-wal").exists()
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?{'mode=ro' if has_wal else 'immutable=1'}", uri=True)
    try:
        check_version(conn, path)
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            raise SchemaMismatch(
                f"{path} is not an SQLite database. Point --home/HERMES_HOME at a Hermes home or at an "
                "empty directory. The file was not changed."
            ) from None
        return  # unreadable right now (locked, permissions): the lazy open answers 503 and keeps retrying
    finally:
        conn.close()
