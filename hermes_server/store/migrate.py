"""Create a fresh state.db from `migrations/*.sql`, or check an existing one, adding the
columns the version profile stores into only where the operator allowed it.

Upstream migrates old databases on open; we do not migrate schemas. A file at schema
version 22 (hermes-agent 0.19.0) up to 30 (the newest layout whose source was read,
docs/versions.md) is served as it is: the tables, views and triggers newer Hermes added
stay untouched and `schema_version` is never changed. Any other version is refused and
left untouched, so real Hermes can migrate it itself. A profile newer than 0.19.0 stores
into a few columns v22 lacks (store/schema.py); a file hermes-server creates gets them at
once, an existing file only with `serve --migrate-home`, else the start is refused with
one line naming what was found and what is wanted. Besides those columns, the only
objects hermes-server adds to a database it did not create are its own `hs_*` indexes,
created idempotently.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes_server.domain.errors import SchemaMismatch
from hermes_server.store.schema import Column, add_columns, missing_columns

log = logging.getLogger("hermes_server.store")

SCHEMA_VERSION = 22
# The newest schema version whose layout hermes-server has read (upstream's v30 SCHEMA_SQL,
# hermes_state_common.py); newer files are refused, as their changes are unknown.
NEWEST_READ = 30
UNTOUCHED = "The file was not changed."

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


def blank(conn: sqlite3.Connection) -> bool:
    """Whether the database holds nothing at all: no table, index, view or trigger, and no
    user_version or application_id by which some program marked it as its own.

    A fresh state.db is such a file until the creating transaction commits, so a creation
    killed before its COMMIT leaves one: the header SQLite writes when WAL is switched on,
    or nothing once a hot journal is rolled back. It is created afresh, as upstream's
    `CREATE TABLE IF NOT EXISTS` schema would fill it (docs/differences.md)."""
    if conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None:
        return False
    return conn.execute("PRAGMA user_version").fetchone()[0] == 0 \
        and conn.execute("PRAGMA application_id").fetchone()[0] == 0


def _version(conn: sqlite3.Connection, path: Path) -> object:
    if "schema_version" not in _user_tables(conn):
        raise SchemaMismatch(
            f"{path} is not a Hermes state.db (it has no schema_version table). "
            f"Point --home/HERMES_HOME at a Hermes home or at an empty directory. {UNTOUCHED}"
        )
    row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    return row[0] if row else None


def check_version(conn: sqlite3.Connection, path: Path) -> None:
    """Raise SchemaMismatch, saying what to do, unless the file is at a schema version served
    as it is (22, hermes-agent 0.19.0, up to NEWEST_READ, written by Hermes 0.20/0.21)."""
    version = _version(conn, path)
    if isinstance(version, int) and SCHEMA_VERSION <= version <= NEWEST_READ:
        return
    if isinstance(version, int) and version > NEWEST_READ:
        advice = (f"It was written by a Hermes newer than any whose storage hermes-server has read (schema "
                  f"versions {SCHEMA_VERSION} to {NEWEST_READ}); use a HERMES_HOME of such a Hermes or an empty one.")
    else:
        # Only a command that opens state.db migrates it (`hermes --version` does not).
        advice = ("Open it once with hermes-agent 0.19.0, which migrates it to "
                  f"version {SCHEMA_VERSION}: run `hermes sessions list` with HERMES_HOME set to this home. "
                  "Or use an empty HERMES_HOME. (--migrate-home only adds columns; it never migrates a schema.)")
    raise SchemaMismatch(
        f"{path} is at Hermes schema version {version}; hermes-server serves schema versions "
        f"{SCHEMA_VERSION} to {NEWEST_READ} (wanted: {SCHEMA_VERSION}). {advice} {UNTOUCHED}"
    )


def columns_refusal(path: Path, version: object, missing: Sequence[Column], wanted_by: str) -> SchemaMismatch:
    """The one-line refusal of a file that lacks columns the profile stores into."""
    names = ", ".join(column.label for column in missing)
    return SchemaMismatch(
        f"{path} is at Hermes schema version {version} without {names}; the {wanted_by} profile wants schema "
        f"version {version} with them. Start once with `serve --migrate-home` to add them (as Hermes 0.20+ "
        f"does; schema_version stays {version}, which hermes-agent 0.19.0 still reads), or use an empty "
        f"HERMES_HOME. {UNTOUCHED}"
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


@dataclass(frozen=True)
class Preparer:
    """Readies a freshly opened writer connection (a `Prepare`): creates a brand-new file with
    every migration and the profile's columns in one transaction; checks an existing one
    before anything is written to it, adding missing columns only when `migrate_home`."""

    columns: tuple[Column, ...] = ()
    migrate_home: bool = False
    wanted_by: str = "0.19.0"
    # The profile's own indexes over those columns (store/schema.py INDEXES).
    indexes: tuple[str, ...] = ()

    def __call__(self, conn: sqlite3.Connection, path: Path) -> None:
        if blank(conn):
            restrict_mode(path)
            conn.execute("PRAGMA journal_mode=WAL")
            added = "".join(f"{column.ddl()};\n" for column in self.columns)
            conn.executescript("BEGIN IMMEDIATE;\n" + schema_script() + "\n" + added + "COMMIT;")
        else:
            check_version(conn, path)
            missing = missing_columns(conn, self.columns)
            if missing and not self.migrate_home:
                raise columns_refusal(path, _version(conn, path), missing, self.wanted_by)
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            if missing:
                conn.execute("BEGIN IMMEDIATE")
                add_columns(conn, missing)
                conn.execute("COMMIT")
                log.warning("added %s to %s (--migrate-home); schema_version unchanged",
                            ", ".join(column.label for column in missing), path)
        for statement in (*HS_INDEXES, *self.indexes):
            conn.execute(statement)


# 0.19.0's: a v22 file as it is.
prepare = Preparer()


def _judging_uri(path: Path) -> str:
    """How check_existing opens `path`: as it was at its last commit, touching as little as it can.

    A `-journal` beside it may be hot (a rollback-journal transaction cut off by a kill, its
    half-written pages already in the main file) or in use by another process: only a normal
    open takes the locks and rolls a hot journal back, as every later open would, so the file
    is judged by what was committed. Else a read-only connection, which still creates
    -wal/-shm beside a WAL database and cannot remove them; and when there is no -wal either,
    everything is in the main file: read it as immutable, which touches nothing else."""
    uri = path.resolve().as_uri()
    if path.with_name(path.name + "-journal").exists():
        return uri
    return f"{uri}?{'mode=ro' if path.with_name(path.name + '-wal').exists() else 'immutable=1'}"


def check_existing(path: Path, preparer: Preparer = prepare) -> list[Column]:
    """Refuse early (before serving) a state.db at another schema version, or one lacking the
    profile's columns without `--migrate-home`; never writes (beyond SQLite rolling back a hot
    journal, see _judging_uri). An empty or blank file is fresh. The columns the first open
    will add (only when allowed), so the caller can say so."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return []
        conn = sqlite3.connect(_judging_uri(path), uri=True)
    except (OSError, sqlite3.Error):
        # A home that cannot be looked into (mode 700, another owner): nothing to judge here; the lazy
        # open answers 503 and readiness names the problem, as for any home that cannot hold state.db.
        return []
    try:
        if blank(conn):
            return []  # a first creation cut off before its commit: the first open creates it afresh
        check_version(conn, path)
        missing = missing_columns(conn, preparer.columns)
        if missing and not preparer.migrate_home:
            raise columns_refusal(path, _version(conn, path), missing, preparer.wanted_by)
        return missing
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
            raise SchemaMismatch(
                f"{path} is not an SQLite database. Point --home/HERMES_HOME at a Hermes home or at an "
                f"empty directory. {UNTOUCHED}"
            ) from None
        return []  # unreadable right now (locked, permissions): the lazy open answers 503 and keeps retrying
    finally:
        conn.close()


def add_columns_now(path: Path, preparer: Preparer) -> None:
    """`serve --migrate-home` at start: open the file once and let `preparer` add what it lacks,
    so the change happens (and is reported) before anything is served, not at some later first open."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=15.0)
    try:
        preparer(conn, path)
    finally:
        conn.close()
