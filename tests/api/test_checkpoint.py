"""The WAL is checkpointed while the server runs, by its own thread rather than inside a commit.

The writer connection never checkpoints (a commit that did would make its request wait for
two fsyncs); these tests show the checkpoints still happen: the WAL stays bounded under a
stream of writes, and once writes stop, what they left in the WAL reaches state.db itself.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

from tests.support.server import RunningServer

CREATES = 1500


def rows_in_main_file(db_path: Path, tmp: Path) -> int:
    """Sessions in state.db alone, without its WAL: only what a checkpoint copied there."""
    alone = tmp / "alone.db"
    shutil.copyfile(db_path, alone)
    conn = sqlite3.connect(alone)
    try:
        return conn.execute("SELECT COUNT(*) FROM sessions WHERE id LIKE 'ck-%'").fetchone()[0]
    finally:
        conn.close()


def test_the_wal_stays_bounded_and_reaches_the_main_file(fresh_server: RunningServer, tmp_path: Path) -> None:
    wal = fresh_server.db_path.with_name("state.db-wal")
    for i in range(CREATES):
        assert fresh_server.client.post("/api/sessions", json={"id": f"ck-{i}"}).status_code == 201
    # Each create appends ~11 pages (4 KiB) to the WAL: 65 MiB in all if it never started over.
    assert wal.stat().st_size < 40 * 1024 * 1024, wal.stat().st_size
    deadline = time.monotonic() + 10
    while rows_in_main_file(fresh_server.db_path, tmp_path) < CREATES:
        assert time.monotonic() < deadline, "the last writes were never checkpointed into state.db"
        time.sleep(0.2)
