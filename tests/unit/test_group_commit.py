"""Group commit: writes queued together share a transaction, yet each succeeds or fails alone.

White-box on purpose: `Database._run_write` (one call per transaction) is counted,
so the test shows that the queued writes really were grouped.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from hermes_server.store import db as store_db


class Refused(Exception):
    """A write's own failure (as SessionExists or TitleConflict would be)."""


def _insert(conn: sqlite3.Connection, sid: str, fail: bool = False) -> str:
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', 1)", (sid,))
    if fail:
        raise Refused(sid)  # after its row was written: the savepoint must take it back
    return sid


def _slow(conn: sqlite3.Connection, started: threading.Event) -> str:
    started.set()
    time.sleep(0.3)  # holds the writer while the other writes queue up
    return _insert(conn, "slow")


def test_queued_writes_share_one_transaction_and_fail_alone(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    database = store_db.Database(tmp_path / "state.db")
    transactions = []
    run_write = store_db.Database._run_write  # noqa: SLF001 - the test counts the writer's transactions

    def counting(self: store_db.Database, op):  # type: ignore[no-untyped-def]
        transactions.append(threading.get_ident())
        return run_write(self, op)

    monkeypatch.setattr(store_db.Database, "_run_write", counting)
    committed_when_answered: dict[str, bool] = {}

    async def write(sid: str, fail: bool) -> str:
        result = await database.write(_insert, sid, fail)
        committed_when_answered[sid] = bool(sqlite3.connect(tmp_path / "state.db").execute(
            "SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone())
        return result

    async def scenario() -> list[object]:
        await database.ensure_open()
        started = threading.Event()
        slow = asyncio.ensure_future(database.write(_slow, started))
        await asyncio.get_running_loop().run_in_executor(None, started.wait)
        writes = [write(f"w{i}", fail=i % 3 == 0) for i in range(20)]
        results = await asyncio.gather(slow, *writes, return_exceptions=True)
        await database.close()
        return results

    transactions.clear()
    results = asyncio.run(scenario())
    assert len(transactions) == 2  # the slow write alone, then the twenty queued behind it together
    assert results[0] == "slow"
    for i, outcome in enumerate(results[1:]):
        if i % 3 == 0:
            assert isinstance(outcome, Refused) and str(outcome) == f"w{i}"
        else:
            assert outcome == f"w{i}"
            assert committed_when_answered[f"w{i}"]  # answered only once committed
    rows = sqlite3.connect(tmp_path / "state.db").execute("SELECT id FROM sessions ORDER BY id").fetchall()
    assert sorted(row[0] for row in rows) == sorted(["slow"] + [f"w{i}" for i in range(20) if i % 3])


def test_a_transaction_that_fails_fails_every_write_in_it(tmp_path: Path) -> None:
    """When the commit itself fails, no write of the group reports success."""
    database = store_db.Database(tmp_path / "state.db")

    def breaks_the_transaction(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('gone', 'cli', 1)")
        conn.execute("ROLLBACK")  # SQLite aborting the transaction (as on a full disk) looks like this
        raise sqlite3.OperationalError("disk I/O error")

    async def scenario() -> list[object]:
        await database.ensure_open()
        started = threading.Event()
        slow = asyncio.ensure_future(database.write(_slow, started))
        await asyncio.get_running_loop().run_in_executor(None, started.wait)
        group = [database.write(_insert, "before"), database.write(breaks_the_transaction),
                 database.write(_insert, "after")]
        results = await asyncio.gather(slow, *group, return_exceptions=True)
        await database.close()
        return results

    results = asyncio.run(scenario())
    assert results[0] == "slow"
    assert all(isinstance(outcome, sqlite3.OperationalError) for outcome in results[1:])
    rows = sqlite3.connect(tmp_path / "state.db").execute("SELECT id FROM sessions").fetchall()
    assert rows == [("slow",)]
