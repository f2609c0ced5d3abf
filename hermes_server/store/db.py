"""The connection layer: one writer thread, a pool of reader threads, lazy open.

Datasette's pattern: every write runs on a single dedicated thread that owns the
only write connection and wraps each operation in `BEGIN IMMEDIATE … COMMIT`,
retrying with jitter while another process holds the lock (bounded by time, not
attempts). Writes that queue up while the writer is busy share one transaction
(group commit), each inside its own savepoint: one failing rolls back only itself,
the others commit together, and none is answered before that commit. Under load
this turns many small commits, each flushing full-text index segments and WAL
frames, into one. Reads run on a small thread pool, each thread with its own connection;
in WAL mode they see the last commit and never wait behind the writer. A request
costs one thread hop per operation, and the event loop never waits on SQLite.
Reads marked `loop_read` (a row by its key, a transcript) are first tried on the
loop itself, where they cost less than the hop: with a zero busy timeout and a
budget of SQLite instructions, so that a read which would wait for a lock or run
long is abandoned at once and run on a reader thread instead.

The writer uses `synchronous=NORMAL` (SQLite's recommendation for WAL): a commit is
in the WAL file, so in the OS, before the client hears of it, and survives the
process being killed at any moment; only an OS crash or power cut can undo the last
commits before a checkpoint, never corrupt the file. FULL would add one fsync per
write request and halve write throughput.

Nothing is cached between operations except answers validated by `change_count`
(read_cache.py), so a commit by another process (real Hermes, a CLI, a test) is
visible to the very next read.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from hermes_server.domain.errors import DatabaseUnavailable, SchemaMismatch
from hermes_server.store import migrate
from hermes_server.store.checkpoint import JOURNAL_SIZE_LIMIT, Checkpointer
from hermes_server.store.gate import NO_GATE, WriteGate
from hermes_server.store.home_check import HomeProblems
from hermes_server.store.storage_faults import WriteHealth, refusing_write, storage_fault

log = logging.getLogger("hermes_server.store")

T = TypeVar("T")
# Readies a freshly opened writer connection: creates or checks the schema of the file.
Prepare = Callable[[sqlite3.Connection, Path], None]


class DatabaseFactory(Protocol):
    """How a part that owns a database file gets its `Database`: `app.py`'s factory applies
    the server's reader threads, write retry and write gate; `Database` itself is one too."""

    def __call__(self, path: Path, *, prepare: Prepare = ..., reader_threads: int = ...) -> Database: ...

# Upstream's retry window: a uniformly random pause between attempts.
_RETRY_PAUSE = (0.02, 0.15)
# Most writes one transaction carries (a bound on how long the write lock is held).
MAX_GROUP = 32


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open one connection with the settings every hermes-server connection shares."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=1.0)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys=ON")
    if readonly:
        conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA busy_timeout=5000")
    else:
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def fetch_dicts(conn: sqlite3.Connection, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    """Rows as plain dicts, built from tuples and the column names.

    `dict(sqlite3.Row)` looks every column up by name (a linear scan per key), which
    costs ~0.5 µs per column: 25 µs for one 48-column session row, more than the
    query itself. Zipping the cursor's column names with plain tuples is 3× cheaper.
    """
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(sql, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


# What a `loop_read` may cost on the event loop before it is moved to a reader thread:
# SQLite virtual-machine instructions, checked every _PROGRESS_STEP. A message row costs
# about 33 of them and 3 µs of Python, so this is a transcript of ~300 rows, ~1 ms.
LOOP_READ_BUDGET = 10_000
_PROGRESS_STEP = 250


def loop_read(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark a read that is usually cheap enough to run on the event loop itself.

    Handing a small read to a reader thread costs more CPU than the read (~30 µs of
    executor, futures and wake-ups against ~10 µs for a row by its key), and under
    load the reader threads fight the loop for the GIL at every row. `Database.read`
    runs a marked function on the loop's own connection, inside LOOP_READ_BUDGET
    instructions and with a zero busy timeout; if the budget runs out or the file is
    locked in a way that would make a reader wait, SQLite stops at once and the read
    is run again on a reader thread. The loop never waits on a lock and never spends
    more than the budget on one read. The function must be a pure read (it may run twice).
    """
    fn.loop_read = True  # type: ignore[attr-defined]
    return fn


class _Budget:
    """SQLite progress handler: interrupts the statement once `left` checks are used up."""

    def __init__(self) -> None:
        self.left = 1 << 30  # only a loop read sets a real budget

    def __call__(self) -> int:
        self.left -= 1
        return 1 if self.left < 0 else 0


def _rollback(conn: sqlite3.Connection) -> None:
    """End an open transaction, if any; a failing storage may refuse even that (tried again later)."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.debug("ROLLBACK failed: %s", exc)


def _settle(futures: list[asyncio.Future[Any]], outcomes: list[tuple[bool, Any]]) -> None:
    """On the loop: give each waiting write its result or exception (unless it gave up waiting)."""
    for future, (ok, value) in zip(futures, outcomes, strict=True):
        if future.cancelled():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _in_savepoint(conn: sqlite3.Connection, op: Callable[[sqlite3.Connection], T]) -> tuple[bool, Any]:
    """Run one write of a group: (True, result), or (False, exception) with its changes undone."""
    conn.execute("SAVEPOINT hs_write")
    try:
        result = op(conn)
    except Exception as exc:
        if not conn.in_transaction:
            raise  # SQLite aborted the whole transaction (I/O error, full disk): the group fails
        conn.execute("ROLLBACK TO hs_write")
        conn.execute("RELEASE hs_write")
        return False, exc
    conn.execute("RELEASE hs_write")
    return True, result


class Database:
    """Access to one SQLite file, opened on first use and re-tried until it opens.

    `prepare` creates or checks the file's schema when the writer connection opens:
    state.db's migration by default; another schema (a dialect's own file)
    passes its own, and gets the same writer thread, group commit and readers.
    `gate` is asked before every operation (store/gate.py; test control's storage
    faults), and `label` is how log lines and errors name the file (its file name).
    """

    def __init__(self, path: Path, *, reader_threads: int = 4, write_retry_seconds: float = 15.0,
                 prepare: Prepare = migrate.prepare, gate: WriteGate = NO_GATE, label: str | None = None) -> None:
        self.path = path
        self.label = label or path.name
        self._gate = gate
        self._prepare = prepare
        self.write_retry_seconds = write_retry_seconds
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="hs-writer")
        self._readers = ThreadPoolExecutor(reader_threads, thread_name_prefix="hs-reader")
        self._writer_conn: sqlite3.Connection | None = None
        # WAL checkpoints run there, never inside a commit (checkpoint.py).
        self._checkpointer = Checkpointer(path, connect)
        # Writes waiting for the writer thread, and whether a drain of them is scheduled.
        self._queued: deque[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = deque()
        self._queue_lock = threading.Lock()
        self._draining = False
        self._reader_conns: list[sqlite3.Connection] = []
        self._loop_conn: sqlite3.Connection | None = None
        self._budget = _Budget()
        self._local = threading.local()
        self._open_lock: asyncio.Lock | None = None
        self._closed = False
        # Whether writes fail for a storage reason (full disk, read-only, I/O error), logged on change.
        self.write_health = WriteHealth(self.label)
        # Why state.db cannot be opened now (logged once per change), for readiness.
        self.home_problems = HomeProblems(path)

    # -- opening -----------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._writer_conn is not None

    async def ensure_open(self) -> None:
        """Open (and if new, create) state.db; raise DatabaseUnavailable if impossible.

        A failure is not remembered: the next request tries again, so the server
        recovers by itself once the storage problem is fixed.
        """
        self._gate.check_open(self.label)
        if self._writer_conn is not None:
            return
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._writer_conn is None:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self._writer, self._open_writer)

    def _open_writer(self) -> None:
        if self._closed:
            raise DatabaseUnavailable("database is closed")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = connect(self.path)
        except (OSError, sqlite3.Error) as exc:
            self.home_problems.open_failed(exc)
            raise DatabaseUnavailable(f"cannot open {self.path}: {exc}") from exc
        try:
            self._prepare(conn, self.path)
        except SchemaMismatch:
            conn.close()
            raise
        except sqlite3.Error as exc:
            conn.close()
            self.home_problems.open_failed(exc)
            raise DatabaseUnavailable(f"cannot prepare {self.path}: {exc}") from exc
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            # A file kept in DELETE mode (store/journal.py): NORMAL is only safe with WAL.
            conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's thread does it
        conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")  # a restarted WAL gives the disk back
        self._writer_conn = conn
        self.home_problems.opened()

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, readonly=True)
            self._local.conn = conn
            self._reader_conns.append(conn)
        return conn

    def _loop_reader(self) -> sqlite3.Connection:
        """The event loop's connection for `loop_read`s: never waits for a lock, stops on budget."""
        if self._loop_conn is None:
            conn = connect(self.path, readonly=True)
            conn.execute("PRAGMA busy_timeout=0")
            conn.set_progress_handler(self._budget, _PROGRESS_STEP)
            self._loop_conn = conn
            self._reader_conns.append(conn)
        return self._loop_conn

    def _read_on_loop(self, fn: Callable[..., T], args: Any, kwargs: Any) -> tuple[bool, T | None]:
        """(True, result), or (False, None) when the read must move to a reader thread."""
        conn = self._loop_reader()
        self._budget.left = LOOP_READ_BUDGET // _PROGRESS_STEP
        try:
            conn.execute("BEGIN")
            return True, fn(conn, *args, **kwargs)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc) or "interrupted" in str(exc):
                return False, None
            raise
        finally:
            self._budget.left = 1 << 30  # the closing statement is never interrupted
            if conn.in_transaction:
                conn.execute("COMMIT")

    def change_count(self) -> int | None:
        """SQLite's `data_version` on the loop's connection: it moves whenever any other
        connection, in this process or another, has committed since the last call.

        That connection only reads, so every commit moves it. None when the database is
        not open or cannot say (then nothing may be taken as unchanged).
        """
        if self._writer_conn is None or self._closed:
            return None
        try:
            return self._loop_reader().execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            return None

    # -- running operations ------------------------------------------------

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on a reader thread inside one read transaction.

        A `loop_read` is tried on the loop first (see there).
        """
        await self.ensure_open()
        try:
            if getattr(fn, "loop_read", False) and not self._closed:
                done, result = self._read_on_loop(fn, args, kwargs)
                if done:
                    return result  # type: ignore[return-value]
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._readers, self._run_read, lambda conn: fn(conn, *args, **kwargs))
        except sqlite3.DatabaseError as exc:
            fault = storage_fault(exc, write=False)
            if fault is None:
                raise
            raise fault from None

    async def write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on the writer thread inside `BEGIN IMMEDIATE … COMMIT`.

        The transaction may also carry other writes queued at the same time; the
        result (or exception) is this write's own, delivered after the commit.
        """
        await self.ensure_open()
        refusal = self._gate.refusal()
        op = refusing_write(refusal) if refusal else (lambda conn: fn(conn, *args, **kwargs))
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        with self._queue_lock:
            self._queued.append((op, future))
            if not self._draining:
                self._draining = True
                self._writer.submit(self._drain)
        return await future

    def _run_read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            return op(conn)
        finally:
            conn.execute("COMMIT")

    def _drain(self) -> None:
        """Writer thread: run queued writes, in order, a group per transaction, until none is left."""
        while True:
            with self._queue_lock:
                batch = [self._queued.popleft() for _ in range(min(MAX_GROUP, len(self._queued)))]
                if not batch:
                    self._draining = False
                    return
            if self._checkpointer.catch_up_due and self._writer_conn is not None:
                self._checkpointer.catch_up(self._writer_conn)
            # A write whose request was cancelled before it started is dropped, as an executor would.
            batch = [(op, future) for op, future in batch if not future.cancelled()]
            if batch:
                outcomes = self._run_group(batch)
                # One wake-up of the loop hands every write of the group its outcome.
                batch[0][1].get_loop().call_soon_threadsafe(_settle, [f for _, f in batch], outcomes)

    def _run_group(self, batch: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]]
                   ) -> list[tuple[bool, Any]]:
        """(ok, result or exception) for each write of the batch, in order; storage failures as StorageFault."""
        conn = self._writer_conn
        changes = conn.total_changes if conn is not None else 0
        outcomes = self._run_batch(batch)
        # Rows changed (rolled-back ones count too) and a write that succeeded: a commit that wrote.
        wrote = conn is not None and conn.total_changes != changes and any(ok for ok, _ in outcomes)
        reviewed = self.write_health.review(outcomes, wrote)
        if wrote:
            self._checkpointer.committed()
        return reviewed

    def _run_batch(self, batch: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]]
                   ) -> list[tuple[bool, Any]]:
        if len(batch) == 1:
            try:
                return [(True, self._run_write(batch[0][0]))]
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                return [(False, exc)]
        try:
            return self._run_write(lambda conn: [_in_savepoint(conn, op) for op, _ in batch])
        except BaseException as exc:  # noqa: BLE001 - the transaction failed: so did every write in it
            return [(False, exc)] * len(batch)

    def _run_write(self, op: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._writer_conn
        if conn is None:
            raise DatabaseUnavailable("database is closed")
        deadline = time.monotonic() + self.write_retry_seconds
        while True:
            try:
                _rollback(conn)  # a rollback that failed with the storage is finished here
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = op(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    _rollback(conn)
                    raise
                return result
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
                log.debug("%s is locked by another writer; retrying", self.label)
                time.sleep(random.uniform(*_RETRY_PAUSE))

    # -- closing -----------------------------------------------------------

    def _close_all(self) -> None:
        self._closed = True
        self._checkpointer.stop()
        for conn in self._reader_conns:
            conn.close()
        self._reader_conns.clear()
        self._loop_conn = None
        if self._writer_conn is not None:
            try:
                self._writer_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                log.warning("WAL checkpoint at shutdown failed: %s", exc)
            self._writer_conn.close()
            self._writer_conn = None

    async def close(self) -> None:
        """Finish queued writes, checkpoint the WAL and close every connection."""
        loop = asyncio.get_running_loop()
        self._readers.shutdown(wait=True)
        await loop.run_in_executor(self._writer, self._close_all)
        self._writer.shutdown(wait=True)

