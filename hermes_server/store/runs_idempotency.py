"""`runs_idempotency.db`: 0.21's durable `Idempotency-Key` records of `POST /v1/runs`.

The file upstream keeps in HERMES_HOME, with its name, table, columns and JSON layout
(`gateway/platforms/api_server_run_idempotency.py`), so either server reads the other's:
one row per (scope, key) holding the request's fingerprint, the run it admitted, that
run's public status (updated as it changes, so it outlives the process), and the owner
process (pid and start time) that ran it. Never a request body or a credential. A row is
pruned only once its run is settled and a day has passed since its last update, measured
on the server's clock (so a manual clock can pass the day). The file is created when the
server starts, in WAL mode, readable only by its owner; if it cannot be opened the records
are kept in memory and capabilities say `durable: false`, as upstream does.

One connection on one thread of its own, as `store/responses.py`. A status update is written
through: `update_status` returns once the record holds it, so a status a client can read from the
owning server is already in the file another process reads (upstream's `_set_run_status` writes
its durable record in the same synchronous step as its in-memory status). Lookups and
reservations are awaited.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from hermes_server.domain.run_keys import RETENTION_SECONDS, SETTLED
from hermes_server.store.files import open_side_store, say_fallback

log = logging.getLogger("hermes_server.store")

T = TypeVar("T")

# Upstream's DDL, laid out as upstream writes it, so sqlite_master holds the same text.
_TABLE_DDL = """CREATE TABLE IF NOT EXISTS run_idempotency (
                scope TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                run_id TEXT NOT NULL,
                status_json TEXT NOT NULL,
                owner_pid INTEGER NOT NULL DEFAULT 0,
                owner_started INTEGER NOT NULL DEFAULT 0,
                retention_until REAL NOT NULL DEFAULT 0,
                acknowledged_at REAL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (scope, idempotency_key)
            )"""
_INDEX_DDL = "CREATE UNIQUE INDEX IF NOT EXISTS run_idempotency_run_id ON run_idempotency(run_id)"
_SELECT_BY_KEY = ("SELECT fingerprint, run_id, status_json, owner_pid, owner_started "
                  "FROM run_idempotency WHERE scope=? AND idempotency_key=?")


def _process_start(pid: int) -> int:
    """A process's start time in clock ticks since boot (Linux `/proc`), 0 where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(frozen=True)
class Owner:
    """The process that runs a run: its pid and start time, so a reused pid is not taken for it."""

    pid: int
    started: int

    @classmethod
    def this_process(cls) -> Owner:
        pid = os.getpid()
        return cls(pid, _process_start(pid))

    def alive(self) -> bool:
        """Whether that process still runs (upstream's `_owner_alive`)."""
        if self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except PermissionError:
            pass
        except OSError:
            return False
        return not self.started or _process_start(self.pid) == self.started


@dataclass(frozen=True)
class KeptRun:
    """What a record says of the run it admitted."""

    run_id: str
    status: dict[str, Any]
    owner: Owner


def _kept(run_id: str, status_json: str, pid: int, started: int) -> KeptRun:
    try:
        status = json.loads(status_json)
    except ValueError:
        status = None
    return KeptRun(run_id, status if isinstance(status, dict) else {}, Owner(int(pid or 0), int(started or 0)))


def _encode(status: dict[str, Any]) -> str:
    return json.dumps(status, sort_keys=True, separators=(",", ":"), default=str)


def _prune(conn: sqlite3.Connection, now: float) -> None:
    """Forget records a day old whose run is settled (an unsettled run keeps its key however long)."""
    stale = conn.execute(
        "SELECT scope, idempotency_key, status_json FROM run_idempotency "
        "WHERE acknowledged_at <= ? OR (retention_until > 0 AND retention_until <= ?) "
        "OR (retention_until <= 0 AND updated_at < ?)",
        (now - RETENTION_SECONDS, now, now - RETENTION_SECONDS)).fetchall()
    for scope, key, status_json in stale:
        if _kept("", status_json, 0, 0).status.get("status") in SETTLED:
            conn.execute("DELETE FROM run_idempotency WHERE scope=? AND idempotency_key=?", (scope, key))


def _outcome(row: tuple[Any, ...], fingerprint: str) -> tuple[str, KeptRun]:
    return ("reused" if row[0] == fingerprint else "conflict"), _kept(*row[1:])


class RunKeyStore:
    """The records of one server (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.durable = True
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="hs-run-keys")
        self._conn: sqlite3.Connection | None = None
        self._thread.submit(self._open).result()

    def _open(self) -> None:
        conn, failure = open_side_store(self.path, (_TABLE_DDL, _INDEX_DDL), timeout=30, autocommit=True)
        if failure is not None:  # as upstream: replays still work, until a restart
            say_fallback(self.path, failure, "Idempotency-Key replays are kept in memory and do not survive a restart")
            self.durable = False
        self._conn = conn

    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn` in one immediate transaction (other processes on the file wait for it)."""
        conn = self._conn
        assert conn is not None
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._run, fn)

    async def lookup(self, scope: str, key: str, fingerprint: str, now: float) -> tuple[str, KeptRun | None]:
        """`missing`, `reused` (same fingerprint) or `conflict`, without reserving anything."""
        def lookup(conn: sqlite3.Connection) -> tuple[str, KeptRun | None]:
            _prune(conn, now)
            row = conn.execute(_SELECT_BY_KEY, (scope, key)).fetchone()
            return ("missing", None) if row is None else _outcome(row, fingerprint)
        return await self._call(lookup)

    async def reserve(self, scope: str, key: str, fingerprint: str, run_id: str, status: dict[str, Any],
                      owner: Owner, now: float) -> tuple[str, KeptRun]:
        """Record the key for `run_id` (`created`), or what another request recorded first."""
        def reserve(conn: sqlite3.Connection) -> tuple[str, KeptRun]:
            _prune(conn, now)
            row = conn.execute(_SELECT_BY_KEY, (scope, key)).fetchone()
            if row is not None:
                return _outcome(row, fingerprint)
            conn.execute(
                "INSERT INTO run_idempotency(scope,idempotency_key,fingerprint,run_id,status_json,"
                "owner_pid,owner_started,retention_until,created_at,updated_at) VALUES(?,?,?,?,?,?,?,?,?,?)",
                (scope, key, fingerprint, run_id, _encode(status), owner.pid, owner.started, 0.0, now, now))
            return "created", KeptRun(run_id, status, owner)
        return await self._call(reserve)

    async def status_for_run(self, scope: str, run_id: str) -> KeptRun | None:
        """The record of a run admitted in this scope, if any."""
        def read(conn: sqlite3.Connection) -> KeptRun | None:
            row = conn.execute("SELECT run_id, status_json, owner_pid, owner_started FROM run_idempotency "
                               "WHERE scope=? AND run_id=?", (scope, run_id)).fetchone()
            return None if row is None else _kept(*row)
        return await self._call(read)

    def update_status(self, run_id: str, status: dict[str, Any], now: float) -> None:
        """Write a run's new status to its record before returning (the caller publishes it in memory
        in the same step: see the module docstring); a failure is logged, not raised."""
        encoded = _encode(status)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("UPDATE run_idempotency SET status_json=?, updated_at=? WHERE run_id=?",
                         (encoded, now, run_id))

        def run() -> None:
            try:
                self._run(write)
            except (sqlite3.Error, AssertionError) as exc:  # AssertionError: the store is closed
                log.warning("the status of run %s could not be kept (%s)", run_id, type(exc).__name__)
        try:
            self._thread.submit(run).result()  # after anything queued before it, in order
        except RuntimeError:  # closed at shutdown: a turn's last word after it is not kept
            log.warning("the status of run %s could not be kept (the store is closed)", run_id)

    async def reset(self) -> None:
        """Forget every record (a registered part of the server's state)."""
        await self._call(lambda conn: conn.execute("DELETE FROM run_idempotency"))

    async def close(self) -> None:
        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        await asyncio.get_running_loop().run_in_executor(self._thread, close)
        self._thread.shutdown(wait=True)


class RunKeys(Protocol):
    """Where a server keeps the Idempotency-Key records of its runs (`RunKeyStore`), or not (`NoRunKeys`)."""

    # Whether the records outlive the process (capabilities' `durable`).
    durable: bool

    async def lookup(self, scope: str, key: str, fingerprint: str, now: float) -> tuple[str, KeptRun | None]: ...

    async def reserve(self, scope: str, key: str, fingerprint: str, run_id: str, status: dict[str, Any],
                      owner: Owner, now: float) -> tuple[str, KeptRun]: ...

    async def status_for_run(self, scope: str, run_id: str) -> KeptRun | None: ...

    def update_status(self, run_id: str, status: dict[str, Any], now: float) -> None: ...

    async def reset(self) -> None: ...

    async def close(self) -> None: ...


class NoRunKeys:
    """The key store of a release without durable keys (before 0.21): it keeps nothing, so every
    key is new, no run is found by its record, and no file is created."""

    durable = False

    async def lookup(self, scope: str, key: str, fingerprint: str, now: float) -> tuple[str, KeptRun | None]:
        return "missing", None

    async def reserve(self, scope: str, key: str, fingerprint: str, run_id: str, status: dict[str, Any],
                      owner: Owner, now: float) -> tuple[str, KeptRun]:
        return "created", KeptRun(run_id, status, owner)

    async def status_for_run(self, scope: str, run_id: str) -> KeptRun | None:
        return None

    def update_status(self, run_id: str, status: dict[str, Any], now: float) -> None:
        return None

    async def reset(self) -> None:
        return None

    async def close(self) -> None:
        return None


NO_RUN_KEYS: RunKeys = NoRunKeys()
