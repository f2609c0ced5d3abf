"""`response_store.db`: the Responses API's stored responses and named conversations.

The file beside state.db that upstream keeps, with its exact name, tables and JSON
layout, so a real Hermes home keeps working with either server: a response stored by
one can be chained from or fetched by the other. It is an LRU of 100 responses by
access time (a fetch and a chain refresh it); deleting or evicting a response also
forgets the conversation names that point at it. A row whose JSON cannot be read is
treated as missing and deleted. The file is created when the server starts, in WAL
mode, readable only by its owner.

One connection on one thread of its own: the store is small and every operation is a
statement or two, so the event loop only waits for the hop.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from hermes_server.domain.titles import has_lone_surrogate
from hermes_server.store.files import open_side_store, say_fallback

T = TypeVar("T")

MAX_STORED_RESPONSES = 100

# Upstream's DDL, laid out as upstream writes it, so sqlite_master holds the same text.
_RESPONSES_DDL = """CREATE TABLE IF NOT EXISTS responses (
                response_id TEXT PRIMARY KEY,
                data TEXT NOT NULL,
                accessed_at REAL NOT NULL
            )"""
_CONVERSATIONS_DDL = """CREATE TABLE IF NOT EXISTS conversations (
                name TEXT PRIMARY KEY,
                response_id TEXT NOT NULL
            )"""


def _storable(key: Any) -> bool:
    """Whether `key` can name a row at all (text SQLite can encode); any other key is simply absent."""
    return isinstance(key, str) and not has_lone_surrogate(key)


class ResponseStore:
    """The store of one server (see the module docstring)."""

    def __init__(self, path: Path, capacity: int = MAX_STORED_RESPONSES) -> None:
        self.path = path
        self.capacity = capacity
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="hs-responses")
        self._conn: sqlite3.Connection | None = None
        self._thread.submit(self._open).result()

    def _open(self) -> None:
        conn, failure = open_side_store(self.path, (_RESPONSES_DDL, _CONVERSATIONS_DDL))
        if failure is not None:  # as upstream: the API still works, from memory
            say_fallback(self.path, failure, "responses are kept in memory")
        self._conn = conn

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            assert self._conn is not None
            try:
                return fn(self._conn)
            except BaseException:
                self._conn.rollback()
                raise
        return await asyncio.get_running_loop().run_in_executor(self._thread, run)

    async def get(self, response_id: Any) -> dict[str, Any] | None:
        """The stored entry (`response`, `conversation_history`, `instructions`, `session_id`), refreshed."""
        if not _storable(response_id):
            return None

        def get(conn: sqlite3.Connection) -> dict[str, Any] | None:
            row = conn.execute("SELECT data FROM responses WHERE response_id = ?", (response_id,)).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE responses SET accessed_at = ? WHERE response_id = ?", (time.time(), response_id))
            try:
                data = json.loads(row[0])
            except (ValueError, TypeError):
                data = None
            if not isinstance(data, dict):
                conn.execute("DELETE FROM responses WHERE response_id = ?", (response_id,))
                data = None
            conn.commit()
            return data
        return await self._call(get)

    async def put(self, response_id: str, data: dict[str, Any]) -> None:
        """Store an entry, then evict the least recently used beyond the capacity."""
        def put(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO responses (response_id, data, accessed_at) VALUES (?, ?, ?)",
                         (response_id, json.dumps(data, default=str), time.time()))
            count = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            if count > self.capacity:
                evicted = [r[0] for r in conn.execute(
                    "SELECT response_id FROM responses ORDER BY accessed_at ASC LIMIT ?", (count - self.capacity,))]
                marks = ",".join("?" for _ in evicted)
                conn.execute(f"DELETE FROM conversations WHERE response_id IN ({marks})", evicted)
                conn.execute(f"DELETE FROM responses WHERE response_id IN ({marks})", evicted)
            conn.commit()
        await self._call(put)

    async def delete(self, response_id: str) -> bool:
        """Forget a response and the conversation names pointing at it; False when it was not stored."""
        if not _storable(response_id):
            return False
        def delete(conn: sqlite3.Connection) -> bool:
            conn.execute("DELETE FROM conversations WHERE response_id = ?", (response_id,))
            gone = conn.execute("DELETE FROM responses WHERE response_id = ?", (response_id,)).rowcount > 0
            conn.commit()
            return gone
        return await self._call(delete)

    async def conversation(self, name: str) -> str | None:
        """The latest response id of a named conversation."""
        if not _storable(name):
            return None
        def read(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT response_id FROM conversations WHERE name = ?", (name,)).fetchone()
            return row[0] if row else None
        return await self._call(read)

    async def set_conversation(self, name: str, response_id: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO conversations (name, response_id) VALUES (?, ?)", (name, response_id))
            conn.commit()
        await self._call(write)

    async def reset(self) -> None:
        """Forget every response and conversation (a registered part of the server's state)."""
        def clear(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM conversations")
            conn.execute("DELETE FROM responses")
            conn.commit()
        await self._call(clear)

    async def close(self) -> None:
        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        await asyncio.get_running_loop().run_in_executor(self._thread, close)
        self._thread.shutdown(wait=True)
