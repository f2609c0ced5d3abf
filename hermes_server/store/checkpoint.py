"""WAL checkpoints on their own thread, so no write waits for an fsync.

SQLite's automatic checkpoint runs inside the commit that takes the WAL past 1,000
pages: that one request copies the pages back into state.db and fsyncs both files,
10–40 ms on an ordinary disk, while every other write queues behind it. With a
session create writing ~11 pages, that was one request in ninety, and it alone
raised the mean latency of a create by more than half.

Here the writer connection never checkpoints (`wal_autocheckpoint=0`); after each
commit it tells the `Checkpointer` how many commits it made, and once enough have
accumulated (about SQLite's own 1,000-page threshold), or a moment after the last
one, this thread runs a PASSIVE checkpoint on its own connection. A passive
checkpoint takes no lock that writers or readers wait for: commits go on appending
to the WAL while it copies what was there. Durability is unchanged: a commit is in the
WAL before its request is answered either way; the checkpoint only moves it.

The WAL file is reused from its start only after a checkpoint copied *everything*,
which a background checkpoint never manages while commits keep arriving during its
fsync: under sustained writes the file would grow without end. So once it holds more
than MAX_WAL_FRAMES, the writer thread finishes the job between two transactions
(`catch_up`): the background runs already copied nearly all of it, so that costs one
fsync, once per MAX_WAL_FRAMES pages written rather than once per 1,000.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("hermes_server.store")

# Commits after which a checkpoint is due (a create writes ~11 pages: ~1,000 pages).
COMMITS_PER_CHECKPOINT = 90
# Seconds after the last commit when what it left in the WAL is checkpointed anyway.
IDLE_SECONDS = 1.0
# WAL pages (4 KiB) beyond which the writer completes a checkpoint itself (16 MiB).
MAX_WAL_FRAMES = 4096
# Bytes a WAL file is cut back to when it starts over (it keeps its largest size otherwise).
JOURNAL_SIZE_LIMIT = 16 * 1024 * 1024


class Checkpointer:
    """A daemon thread that checkpoints `path`'s WAL when the writer has committed enough."""

    def __init__(self, path: Path, connect: Callable[[Path], sqlite3.Connection]) -> None:
        self.path = path
        self._connect = connect
        self._pending = 0
        self._wake = threading.Event()
        self._stopped = False
        self._failing = False
        self._thread: threading.Thread | None = None
        # Set by this thread when the WAL outgrew MAX_WAL_FRAMES; the writer then catches up.
        self.catch_up_due = False

    def committed(self) -> None:
        """Writer thread, after each commit that wrote: count it, wake the thread when a checkpoint is due."""
        self._pending += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="hs-checkpoint", daemon=True)
            self._thread.start()
        if self._pending >= COMMITS_PER_CHECKPOINT:
            self._wake.set()

    def catch_up(self, writer: sqlite3.Connection) -> None:
        """Writer thread, between transactions: copy the rest, so the next commit starts the WAL over."""
        self.catch_up_due = False
        self._checkpoint(writer)  # its length is still the old one: the WAL starts over at the next commit

    def stop(self) -> None:
        """Stop the thread (the writer then checkpoints the rest itself as it closes)."""
        self._stopped = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while not self._stopped:
                if not self._wake.wait(IDLE_SECONDS) and not self._pending:
                    continue
                self._wake.clear()
                if self._stopped:
                    return
                self._pending = 0
                if conn is None:
                    conn = self._connect(self.path)
                wal_frames = self._checkpoint(conn)
                self.catch_up_due = wal_frames is not None and wal_frames > MAX_WAL_FRAMES
        finally:
            if conn is not None:
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> int | None:
        """A PASSIVE checkpoint; the WAL's length in pages when it began (commits made during its
        fsync came after), or None when it failed."""
        try:
            wal_frames = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]
        except sqlite3.Error as exc:  # full disk, I/O error: the next one tries again; said once
            if not self._failing:
                log.warning("WAL checkpoint failed (retried after the next commits): %s", exc)
            self._failing = True
            return None
        if self._failing:
            log.info("WAL checkpoints work again")
        self._failing = False
        return int(wal_frames)
