"""`loop_read`: small reads run on the event loop; long or blocked ones move to a reader thread.

The loop must never wait on SQLite: a read that outgrows the instruction budget,
or meets a lock, is abandoned at once and run again on a reader thread, and
gives the same result.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from hermes_server.store import db as store_db


def _fill(path: Path, rows: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)",
                     [(f"s{i:05d}", float(i)) for i in range(rows)])
    conn.execute("COMMIT")
    conn.close()


@store_db.loop_read
def ids_read(conn: sqlite3.Connection, threads: list[str]) -> list[str]:
    threads.append(threading.current_thread().name)
    return [row[0] for row in conn.execute("SELECT id FROM sessions ORDER BY id")]


def test_a_small_read_runs_on_the_loop(tmp_path: Path) -> None:
    database = store_db.Database(tmp_path / "state.db")
    threads: list[str] = []

    async def scenario() -> list[str]:
        await database.ensure_open()
        _fill(tmp_path / "state.db", 10)
        result = await database.read(ids_read, threads)
        await database.close()
        return result

    assert asyncio.run(scenario()) == [f"s{i:05d}" for i in range(10)]
    assert threads == ["MainThread"]


def test_a_read_over_budget_moves_to_a_reader_thread(tmp_path: Path) -> None:
    database = store_db.Database(tmp_path / "state.db")
    threads: list[str] = []

    async def scenario() -> list[str]:
        await database.ensure_open()
        _fill(tmp_path / "state.db", 5000)  # far more than the budget lets the loop read
        result = await database.read(ids_read, threads)
        await database.close()
        return result

    assert asyncio.run(scenario()) == [f"s{i:05d}" for i in range(5000)]
    assert threads[0] == "MainThread" and threads[1].startswith("hs-reader") and len(threads) == 2


@store_db.loop_read
def locked_on_the_loop(conn: sqlite3.Connection, threads: list[str]) -> str:
    """What SQLite answers when the file is locked (in WAL mode: during another process's recovery)."""
    threads.append(threading.current_thread().name)
    if threading.current_thread() is threading.main_thread():
        raise sqlite3.OperationalError("database is locked")
    return "read on a reader thread"


def test_a_locked_file_moves_the_read_to_a_reader_thread(tmp_path: Path) -> None:
    database = store_db.Database(tmp_path / "state.db")
    threads: list[str] = []

    async def scenario() -> str:
        await database.ensure_open()
        result = await database.read(locked_on_the_loop, threads)
        await database.close()
        return result

    assert asyncio.run(scenario()) == "read on a reader thread"
    assert threads[0] == "MainThread" and threads[1].startswith("hs-reader") and len(threads) == 2


def test_other_errors_are_not_retried(tmp_path: Path) -> None:
    database = store_db.Database(tmp_path / "state.db")

    @store_db.loop_read
    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("SELECT * FROM no_such_table")

    async def scenario() -> None:
        await database.ensure_open()
        try:
            await database.read(broken)
        finally:
            await database.close()

    try:
        asyncio.run(scenario())
    except sqlite3.OperationalError as exc:
        assert "no such table" in str(exc)
    else:
        raise AssertionError("the error was swallowed")
