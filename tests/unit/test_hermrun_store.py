"""herm-run.db on a real file: schema, ids, allowance, states, and that refusals write nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from hermes_server.domain.errors import SchemaMismatch
from hermes_server.hermrun.errors import (
    InvalidState,
    NotFound,
    RateLimited,
    ValidationFailed,
)
from hermes_server.hermrun.fixture import load, parse_herm_run
from hermes_server.hermrun.requests import CreateRequest, ListQuery, UpdateRequest
from hermes_server.hermrun.rules import Allowance
from hermes_server.hermrun.store import FILE_NAME, HermRunStore
from tests.hermrun.support import store_at

T = TypeVar("T")
DEFAULT = Allowance(5, 60.0)
NOW = 1893456000.0


def run(home: Path, job: Callable[[HermRunStore], Awaitable[T]]) -> T:
    """Run `job` on a store over `home`, on a fresh event loop, closing the store after."""
    async def main() -> T:
        store = store_at(home)
        try:
            return await job(store)
        finally:
            await store.close()
    return asyncio.run(main())


def create(store: HermRunStore, now: float = NOW, deterministic: bool = True, **fields: Any) -> Awaitable[dict]:
    request = CreateRequest(**{"agent_id": "agent_1", "subject_id": "user_1", **fields})
    return store.create(request, now, DEFAULT, deterministic)


def test_created_on_first_use_in_wal(tmp_path: Path) -> None:
    assert not (tmp_path / FILE_NAME).exists()
    row = run(tmp_path, lambda s: create(s))
    assert row["id"] == "session_0000000000000001" and row["status"] == "idle"
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert not (tmp_path / "state.db").exists()


def test_a_foreign_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE other (x)")
    before = path.read_bytes()
    with pytest.raises(SchemaMismatch, match=r"is not a herm-run\.db"):
        run(tmp_path, lambda s: s.get("x"))
    assert path.read_bytes() == before


def test_deterministic_ids_continue_after_a_restart_and_skip_stored_ones(tmp_path: Path) -> None:
    async def first(store: HermRunStore) -> list[str]:
        await load(store, parse_herm_run({"sessions": [
            {"id": "session_0000000000000002", "agentId": "agent_1", "subjectId": "x"}]}, NOW))
        return [(await create(store, subject_id=f"u{i}"))["id"] for i in range(2)]
    assert run(tmp_path, first) == ["session_0000000000000001", "session_0000000000000003"]

    async def after_delete(store: HermRunStore) -> str:
        await store.delete("session_0000000000000003")
        return (await create(store, subject_id="u9"))["id"]
    assert run(tmp_path, after_delete) == "session_0000000000000004"  # a deleted id is not given again


def test_random_ids(tmp_path: Path) -> None:
    async def job(store: HermRunStore) -> set[str]:
        return {(await create(store, deterministic=False, subject_id=f"u{i}"))["id"] for i in range(3)}
    ids = run(tmp_path, job)
    assert len(ids) == 3 and all(i.startswith("session_") and len(i) == 24 for i in ids)


def test_the_allowance_is_per_agent_and_subject_and_refusals_use_none(tmp_path: Path) -> None:
    async def job(store: HermRunStore) -> None:
        for _ in range(5):
            await create(store)
        with pytest.raises(RateLimited) as caught:
            await create(store, now=NOW + 20)
        assert caught.value.retry_after == 40
        await create(store, agent_id="agent_2")  # another agent, same subject
        await create(store, subject_id="user_2")  # same agent, another subject
        await create(store, now=NOW + 60)  # the next window
    run(tmp_path, job)
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 8
        assert conn.execute("SELECT window_start, used FROM allowance WHERE agent_id = 'agent_1' AND "
                            "subject_id = 'user_1'").fetchone() == (NOW + 60, 1)


def test_refused_creates_write_nothing(tmp_path: Path) -> None:
    async def job(store: HermRunStore) -> None:
        await load(store, parse_herm_run({"agents": [{"id": "agent_1", "versions": [{"id": "v1"}]}]}, NOW))
        with pytest.raises(NotFound):
            await create(store, agent_id="ghost")
        with pytest.raises(ValidationFailed):
            await create(store, role="admin")
        with pytest.raises(ValidationFailed):
            await create(store, tag="nope")
    run(tmp_path, job)
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM allowance").fetchone()[0] == 0


def test_the_fixture_allowance_overrides_the_setting_and_an_agent_its_own(tmp_path: Path) -> None:
    async def job(store: HermRunStore) -> None:
        await load(store, parse_herm_run({"allowance": {"conversations": 1, "window_seconds": 10}, "agents": [
            {"id": "agent_1"}, {"id": "agent_2", "allowance": {"conversations": 2}}]}, NOW))
        await create(store)
        with pytest.raises(RateLimited) as caught:
            await create(store)
        assert caught.value.retry_after == 10
        await create(store, agent_id="agent_2")
        await create(store, agent_id="agent_2")
        with pytest.raises(RateLimited) as caught:
            await create(store, agent_id="agent_2")
        assert caught.value.retry_after == 60
    run(tmp_path, job)


def test_list_order_filters_and_pages(tmp_path: Path) -> None:
    async def job(store: HermRunStore) -> None:
        ids = [(await create(store, now=NOW, subject_id=f"u{i % 2}"))["id"] for i in range(4)]
        await store.archive(ids[0], NOW)
        rows, more = await store.list(ListQuery())
        assert [r["id"] for r in rows] == ids[:0:-1] and not more  # newest first; equal times: later first
        rows, more = await store.list(ListQuery(limit=2))
        assert [r["id"] for r in rows] == [ids[3], ids[2]] and more
        rows, _ = await store.list(ListQuery(subject_id="u1"))
        assert [r["id"] for r in rows] == [ids[3], ids[1]]
        rows, _ = await store.list(ListQuery(status="archived"))
        assert [r["id"] for r in rows] == [ids[0]]
        rows, more = await store.list(ListQuery(offset=10**30))
        assert rows == [] and not more
    run(tmp_path, job)


def test_update_archive_delete_and_states(tmp_path: Path) -> None:
    async def job(store: HermRunStore) -> None:
        sid = (await create(store, title="first"))["id"]
        row = await store.update(sid, UpdateRequest(yolo_mode=True, metadata={"a": "b"}), NOW + 1)
        assert (row["title"], row["yolo_mode"], row["metadata"], row["updated_at"]) == ("first", 1, '{"a": "b"}',
                                                                                       NOW + 1)
        for status in ("running", "waiting_on_human"):
            await store.set_state(sid, NOW + 2, status=status)
            with pytest.raises(InvalidState):
                await store.archive(sid, NOW + 3)
            with pytest.raises(InvalidState):
                await store.delete(sid)
        await store.set_state(sid, NOW + 4, status="idle")
        archived = await store.archive(sid, NOW + 5)
        assert archived["status"] == "archived" and archived["updated_at"] == NOW + 5
        assert await store.archive(sid, NOW + 6) == archived  # unchanged
        await store.delete(sid)
        with pytest.raises(NotFound):
            await store.get(sid)
        with pytest.raises(NotFound):
            await store.delete(sid)
    run(tmp_path, job)


def test_sessions_survive_a_restart_and_reset_empties_everything(tmp_path: Path) -> None:
    sid = run(tmp_path, lambda s: create(s))["id"]
    assert run(tmp_path, lambda s: s.get(sid))["id"] == sid

    async def reset(store: HermRunStore) -> str:
        await store.reset()
        return (await create(store))["id"]
    assert run(tmp_path, reset) == "session_0000000000000001"
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("SELECT used FROM allowance").fetchall() == [(1,)]
