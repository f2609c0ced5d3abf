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
commit sees it, as without the cache. Identical misses that arrive together share one
build rather than queueing a copy each on the reader threads.

Only what the caller caches is cached, and only values that are pure functions of
the database and the key (never time, never the request). Bounded by bytes; 0 turns
it off.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Awaitable, Callable, Hashable

from hermes_server.store.db import Database

# An entry larger than this share of the budget is not kept (it would evict everything else).
_LARGEST_SHARE = 4


class _Abandoned(Exception):
    """The build others waited for stopped with its request (cancelled), not with an answer."""


class ReadCache:
    """Encoded answers by key, for one database state at a time."""

    def __init__(self, db: Database, budget_bytes: int) -> None:
        self.db = db
        self.budget = budget_bytes
        self._version: int | None = None
        self._entries: OrderedDict[Hashable, bytes] = OrderedDict()
        self._size = 0
        self._building: dict[tuple[Hashable, int], asyncio.Future[bytes]] = {}

    async def get(self, key: Hashable, build: Callable[[], Awaitable[bytes]]) -> bytes:
        """The answer for `key`: remembered if the database is unchanged since it was built, else built.

        `build` raises as it would uncached (nothing is remembered then). Call after
        `db.ensure_open()`, so an unavailable database still answers as it does.
        """
        version = self.db.change_count() if self.budget else None
        if version is None:
            return await build()
        if version != self._version:
            self._entries.clear()
            self._size = 0
            self._version = version
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        flight = (key, version)
        pending = self._building.get(flight)
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except _Abandoned:  # the request building it was cancelled: build our own
                return await build()
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._building[flight] = future
        try:
            value = await build()
        except asyncio.CancelledError:
            self._fail(future, _Abandoned())
            raise
        except Exception as exc:
            self._fail(future, exc)
            raise
        else:
            future.set_result(value)
            self._keep(key, version, value)
            return value
        finally:
            del self._building[flight]

    @staticmethod
    def _fail(future: asyncio.Future[bytes], exc: Exception) -> None:
        """Hand the failure to whoever waits; marked retrieved, so an unshared one is not logged."""
        future.set_exception(exc)
        future.exception()

    def _keep(self, key: Hashable, version: int, value: bytes) -> None:
        if version != self._version or len(value) * _LARGEST_SHARE > self.budget:
            return
        self._entries[key] = value
        self._size += len(value)
        while self._size > self.budget:
            _, dropped = self._entries.popitem(last=False)
            self._size -= len(dropped)
