"""Answers of reads remembered until the database changes, whoever changes it.

A dashboard polls the session list, a CI suite reads the same transcripts again and
again: most reads find state.db exactly as the previous identical read did. Building
their answer again (a 50-row page is ~2 ms of SQLite, Python rows and JSON) is waste,
provided "exactly as" is certain. SQLite says so itself: `PRAGMA data_version` on a
connection changes whenever any *other* connection (our writer, real Hermes in
another process, a CLI, a test's sqlite3) has committed since that connection last
looked. The event loop's read-only connection never writes, so its counter moves on
every commit by anyone, and asking costs ~2 µs.

So an entry is valid only for the counter it was built under: a different counter
empties the cache at once (every entry is of one database state). The counter is read
before the answer is built, so an entry is never newer-labelled than its content: a
commit landing mid-build only makes the next lookup miss. The very next read after any
commit sees it, as without the cache.

Misses of one key are built one at a time, each waiter looking again once its turn
comes: with an unchanged database the first build answers them all; with commits in
between (a list polled while sessions change) each still gets a fresh build, but the
builds no longer run side by side on the reader threads, where they fought each other
and the event loop for the GIL at every SQLite step and 32 clients got fewer lists a
second than one.

Only what the caller caches is cached, and only values that are pure functions of
the database and the key (never time, never the request). Bounded by bytes; 0 turns
it off.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field

from hermes_server.store.db import Database

# An entry larger than this share of the budget is not kept (it would evict everything else).
_LARGEST_SHARE = 4


@dataclass
class _Turn:
    """The one build of a key at a time, and how many requests hold or wait for it."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class ReadCache:
    """Encoded answers by key, for one database state at a time."""

    def __init__(self, db: Database, budget_bytes: int) -> None:
        self.db = db
        self.budget = budget_bytes
        self._version: int | None = None
        self._entries: OrderedDict[Hashable, bytes] = OrderedDict()
        self._size = 0
        self._turns: dict[Hashable, _Turn] = {}

    async def reset(self) -> None:
        """Forget every answer (a change of state.db would too; this also frees the memory)."""
        self._version = None
        self._entries.clear()
        self._size = 0

    async def get(self, key: Hashable, build: Callable[[], Awaitable[bytes]]) -> bytes:
        """The answer for `key`: remembered if the database is unchanged since it was built, else built.

        `build` raises as it would uncached (nothing is remembered then). Call after
        `db.ensure_open()`, so an unavailable database still answers as it does.
        """
        if not self.budget:
            return await build()
        version, hit = self._lookup(key)
        if hit is not None:
            return hit
        turn = self._turns.setdefault(key, _Turn())
        turn.users += 1
        try:
            waited = turn.lock.locked()
            async with turn.lock:
                if waited:
                    # Looked up again: the build this request waited for may have answered it,
                    # and the counter read now is later than the request, so as good as fresh.
                    version, hit = self._lookup(key)
                    if hit is not None:
                        return hit
                value = await build()
                if version is not None:
                    self._keep(key, version, value)
                return value
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[key]

    def _lookup(self, key: Hashable) -> tuple[int | None, bytes | None]:
        """The counter now, and the remembered answer if it is unchanged (a change empties the cache)."""
        version = self.db.change_count()
        if version is None:
            return None, None
        if version != self._version:
            self._entries.clear()
            self._size = 0
            self._version = version
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return version, hit

    def _keep(self, key: Hashable, version: int, value: bytes) -> None:
        if version != self._version or len(value) * _LARGEST_SHARE > self.budget:
            return
        self._entries[key] = value
        self._size += len(value)
        while self._size > self.budget:
            _, dropped = self._entries.popitem(last=False)
            self._size -= len(dropped)
