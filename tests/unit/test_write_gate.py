"""A `Database`'s write gate (store/gate.py) and test control's (testing/storage_gate.py).

The database asks its gate before every operation; it names its own file in what it
logs and raises, so herm-run.db's refusals no longer speak of state.db.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import pytest

from hermes_server.domain.errors import DatabaseUnavailable, StorageFault
from hermes_server.store.db import Database
from hermes_server.store.gate import NO_GATE
from hermes_server.store.storage_faults import REASONS
from hermes_server.testing.request_context import RequestContext, serving
from hermes_server.testing.storage_gate import StorageGate, StorageGates


def _insert(conn: sqlite3.Connection, sid: str) -> str:
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', 1)", (sid,))
    return sid


def _count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])


def test_the_default_gate_lets_everything_through(tmp_path: Path) -> None:
    async def main() -> None:
        database = Database(tmp_path / "state.db")
        assert database._gate is NO_GATE and database.label == "state.db"  # noqa: SLF001 - the default, not exposed
        try:
            assert await database.write(_insert, "a") == "a"
            assert await database.read(_count) == 1
        finally:
            await database.close()
    asyncio.run(main())


def test_a_refusal_fails_the_write_as_the_storage_would_and_names_the_file(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        gate = StorageGate()
        database = Database(tmp_path / "herm-run.db", gate=gate)
        try:
            await database.write(_insert, "before")
            gate.refuse_all_for("disk_full", 60)
            with pytest.raises(StorageFault, match="database or disk is full"):
                await database.write(_insert, "refused")
            await gate.reset()
            await database.write(_insert, "after")
            assert await database.read(_count) == 2
        finally:
            await database.close()
    with caplog.at_level(logging.WARNING, logger="hermes_server.store"):
        asyncio.run(main())
    messages = [record.getMessage() for record in caplog.records]
    assert any(m.startswith("herm-run.db refuses writes: database or disk is full") for m in messages)
    assert any(m.startswith("herm-run.db accepts writes again") for m in messages)
    assert not any("state.db" in m for m in messages)


def test_an_outage_refuses_every_operation_until_it_ends(tmp_path: Path) -> None:
    async def main() -> None:
        gate = StorageGate()
        database = Database(tmp_path / "herm-run.db", gate=gate)
        try:
            gate.fail_for(60)
            with pytest.raises(DatabaseUnavailable, match=r"herm-run\.db unavailable"):
                await database.read(_count)
            await gate.reset()
            assert await database.read(_count) == 0
        finally:
            await database.close()
    asyncio.run(main())


def test_a_request_refusal_reaches_every_gate_of_that_request_only() -> None:
    gates = StorageGates()
    first, second = gates.of("state.db"), gates.of("herm-run.db")
    assert gates.of("state.db") is first and list(gates.by_label()) == ["state.db", "herm-run.db"]

    async def turn() -> tuple[str | None, str | None]:
        return first.refusal(), second.refusal()

    async def request(kind: str | None) -> tuple[str | None, str | None]:
        with serving(RequestContext("session_chat", "POST", "s")) as current:
            current.write_refusal = None if kind is None else REASONS[kind]
            return await asyncio.create_task(turn())  # the turn a request starts runs in a task of its own

    async def main() -> None:
        assert await asyncio.create_task(request("read_only")) == ("database is read-only",) * 2
        assert await asyncio.create_task(request(None)) == (None, None)
        assert (first.refusal(), second.refusal()) == (None, None)  # outside any request
    asyncio.run(main())
