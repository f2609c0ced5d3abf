"""Storage that fails under an open database: a full disk, a read-only file, an I/O error.

These are conditions of the machine, not bugs: SQLite rolls the failed transaction
back, so a refused write leaves nothing behind, and the next write after space or
permission returns succeeds on the same connection. `Database` turns them into
`StorageFault` (a 503 envelope naming the cause) and `WriteHealth` logs the
condition once when it starts and once when it clears, instead of once per request.

A database's write gate (store/gate.py; the fault injection of `--fixture-api`)
refuses writes through the same path (`refusing_write`: a write that raises
`StorageFault` inside its own transaction), so a connector sees exactly what a real
full disk produces: the same answers and the same log lines.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from hermes_server.domain.errors import StorageFault

log = logging.getLogger("hermes_server.store")

# SQLite's primary result codes (the low byte of an extended code) that mean the storage,
# not the statement, failed; and how the answer names each.
_SQLITE_FULL, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CANTOPEN = 13, 8, 10, 14
REASONS: dict[str, str] = {
    "disk_full": "database or disk is full",
    "read_only": "database is read-only",
    "io_error": "disk I/O error",
}
_REASON_BY_CODE = {
    _SQLITE_FULL: REASONS["disk_full"],
    _SQLITE_READONLY: REASONS["read_only"],
    _SQLITE_IOERR: REASONS["io_error"],
    _SQLITE_CANTOPEN: "unable to open the database file",
}


def storage_fault(exc: BaseException, *, write: bool) -> StorageFault | None:
    """The StorageFault `exc` stands for, or None when it is some other failure."""
    if isinstance(exc, StorageFault):
        return exc
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        reason = None if code is None else _REASON_BY_CODE.get(code & 0xFF)
        if reason is not None:
            return StorageFault(reason, write=write)
    return None


def refusing_write(reason: str) -> Callable[[sqlite3.Connection], None]:
    """A write that fails inside its transaction as the storage would, changing nothing."""
    def refused(conn: sqlite3.Connection) -> None:
        raise StorageFault(reason)
    return refused


class WriteHealth:
    """Whether writes currently fail for a storage reason, logged on each change only.

    `review` runs on the writer thread alone, so its state needs no lock. `label` names
    the file in the log (state.db, or a dialect's own file).
    """

    def __init__(self, label: str = "state.db") -> None:
        self.label = label
        self.failing: str | None = None

    def review(self, outcomes: list[tuple[bool, Any]], wrote: bool) -> list[tuple[bool, Any]]:
        """The outcomes of one transaction, storage failures as StorageFault; logs a change of state.

        `wrote` says the transaction committed changed rows: only that proves the storage
        takes writes again (a transaction that changed nothing commits even on a full disk).
        """
        reviewed: list[tuple[bool, Any]] = []
        reason = None
        for ok, value in outcomes:
            fault = None if ok else storage_fault(value, write=True)
            if fault is not None:
                reason = fault.reason
                value = fault
            reviewed.append((ok, value))
        if reason is not None and reason != self.failing:
            log.warning("%s refuses writes: %s. Each write answers 503 and stores nothing; "
                        "reads go on. Writes resume by themselves once the cause is gone.", self.label, reason)
            self.failing = reason
        elif reason is None and self.failing is not None and wrote:
            log.warning("%s accepts writes again (it refused them: %s)", self.label, self.failing)
            self.failing = None
        return reviewed
