"""Side files of a home that only their owner may read: response_store.db, runs_idempotency.db.

They hold conversations and run statuses, as state.db does, so they get the key file's mode
(0600), and so do the -wal and -shm SQLite made beside them before the mode was set.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Literal

from hermes_server.store.home_check import probe

log = logging.getLogger("hermes_server.store")


def owner_only(path: Path) -> None:
    """Mode 0600 on `path` and its -wal/-shm where they exist; a filesystem without modes is let be."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if candidate.exists():
                candidate.chmod(0o600)
        except OSError:
            pass  # some mounts have no modes: the database still works


def open_side_store(path: Path, ddl: tuple[str, ...], *, timeout: float = 5.0,
                    autocommit: bool = False) -> tuple[sqlite3.Connection, str | None]:
    """`path` opened in WAL with its tables, owner-only; or, when the home cannot hold it (as
    upstream does: the API keeps working), an in-memory database with the same tables.
    Returns the connection and, for the fallback, the name of the error that caused it."""
    isolation: Literal["DEFERRED"] | None = None if autocommit else "DEFERRED"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout, check_same_thread=False, isolation_level=isolation)
        conn.execute("PRAGMA journal_mode=WAL")
        for statement in ddl:
            conn.execute(statement)
        conn.commit()
    except (OSError, sqlite3.Error) as exc:
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=isolation)
        for statement in ddl:
            conn.execute(statement)
        return conn, type(exc).__name__
    owner_only(path)
    return conn, None


def say_fallback(path: Path, failure: str, consequence: str) -> None:
    """Log that `path` is served from memory. A warning when the home works but this file does not;
    when the home itself cannot be used, state.db's line already says so and what to do, so this
    one is a debug line: an unusable home is said in one line at start."""
    level = logging.WARNING if probe(path.parent) is None else logging.DEBUG
    log.log(level, "%s cannot be opened (%s); %s", path.name, failure, consequence)
