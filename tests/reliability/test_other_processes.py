"""Other processes on the same state.db: a long write lock, and connections that come and go.

Real Hermes (a CLI, a gateway, a dashboard) opens the same file while the server
runs. Two things must hold:

- another process holding the write lock for 3 s makes writes wait, never fail,
  and does not hold up reads at all (upstream's reads stalled for up to 2.8 s,
  queued behind its writer; in WAL mode they need not);
- another process opening and closing the file over and over must not take the
  server's WAL, shared memory or locks away from it (upstream lost them).

The other process is a real subprocess with its own SQLite connection.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.db import integrity, lineage_problems, sql
from tests.support.server import KEY, RunningServer, log_trouble

pytestmark = pytest.mark.slow

LOCK_SECONDS = 3.0

HOLD_LOCK = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('held-by-other', 'cli', 1)")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
print("released", flush=True)
conn.close()
"""

CHURN = r"""
import os, sqlite3, sys
path, rounds = sys.argv[1], int(sys.argv[2])
for i in range(rounds):
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
    if i % 10 == 0:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', 1)", (f"churn-{i}",))
        conn.execute("COMMIT")
    conn.close()
    if not (os.path.exists(path + "-wal") and os.path.exists(path + "-shm")):
        print(f"lost the WAL files after round {i}", flush=True)
print("done", flush=True)
"""


class Traffic:
    """Clients sending reads and writes in a loop, recording status and latency of each."""

    def __init__(self, server: RunningServer, tag: str) -> None:
        self.server = server
        self.tag = tag  # makes created ids unique per test
        self.stop = threading.Event()
        self.reads: list[tuple[float, float, int]] = []  # (sent at, seconds, status)
        self.writes: list[tuple[float, float, int]] = []
        self.threads = [threading.Thread(target=self._reader, args=(i,)) for i in range(3)]
        self.threads += [threading.Thread(target=self._writer, args=(i,)) for i in range(2)]

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)

    def _reader(self, index: int) -> None:
        paths = ["/api/sessions/other-0", "/api/sessions?limit=20", "/api/sessions/other-1/messages"]
        with self._client() as client:
            n = 0
            while not self.stop.is_set():
                sent = time.monotonic()
                status = client.get(paths[(n + index) % len(paths)]).status_code
                self.reads.append((sent, time.monotonic() - sent, status))
                n += 1
                time.sleep(0.01)

    def _writer(self, index: int) -> None:
        with self._client() as client:
            n = 0
            while not self.stop.is_set():
                sent = time.monotonic()
                if n % 2:
                    answer = client.patch("/api/sessions/other-0", json={"title": f"{self.tag} {index} {n}"})
                else:
                    answer = client.post("/api/sessions", json={"id": f"{self.tag}-w{index}-{n}"})
                self.writes.append((sent, time.monotonic() - sent, answer.status_code))
                n += 1
                time.sleep(0.05)

    def __enter__(self) -> Traffic:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def seed(server: RunningServer) -> None:
    for sid in ("other-0", "other-1"):
        if server.client.get(f"/api/sessions/{sid}").status_code == 404:
            assert server.client.post("/api/sessions", json={"id": sid}).status_code == 201
    assert server.client.post("/api/sessions/other-1/chat", json={"message": "hello"}).status_code == 200


def test_a_three_second_write_lock_delays_writes_and_not_reads(server: RunningServer) -> None:
    seed(server)
    with Traffic(server, "lock") as traffic:
        time.sleep(0.5)
        holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(server.db_path), str(LOCK_SECONDS)],
                                  stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        locked_at = time.monotonic()
        assert holder.stdout.readline().strip() == "released"
        released_at = time.monotonic()
        holder.wait(10)
        time.sleep(0.5)
    assert [s for *_, s in traffic.reads + traffic.writes if s >= 300] == []  # nothing failed
    during = [seconds for sent, seconds, _ in traffic.reads if locked_at <= sent < released_at - 0.1]
    assert len(during) > 30
    # Writes in progress while the lock was held waited for it, then went through.
    waiting = [(sent, seconds) for sent, seconds, _ in traffic.writes
               if sent < released_at - 0.5 and sent + seconds > locked_at + 0.5]
    assert len(waiting) >= 2
    assert all(sent + seconds >= released_at - 0.05 for sent, seconds in waiting)
    waited = [seconds for _, seconds in waiting]
    assert max(during) < 0.5, f"a read waited {max(during):.2f}s behind another process's write lock"
    assert server.client.get("/api/sessions/held-by-other").status_code == 200
    print(f"\nwrite lock held {released_at - locked_at:.1f}s: {len(during)} reads during it, "
          f"p50 {statistics.median(during) * 1000:.1f} ms, max {max(during) * 1000:.1f} ms; "
          f"{len(waited)} writes waited up to {max(waited):.2f}s, none failed")
    assert log_trouble(server) == []


def test_another_process_opening_and_closing_the_file(server: RunningServer) -> None:
    seed(server)
    rounds = 300
    with Traffic(server, "churn") as traffic:
        churn = subprocess.run([sys.executable, "-c", CHURN, str(server.db_path), str(rounds)],
                               capture_output=True, text=True, timeout=120)
        time.sleep(0.3)
    assert churn.stdout.strip().splitlines() == ["done"], churn.stdout + churn.stderr
    assert [s for *_, s in traffic.reads + traffic.writes if s >= 300] == []
    assert len(traffic.reads) > 20 and len(traffic.writes) > 5
    # The server's connections still work on the same WAL: it sees the other process's rows,
    # and the other process sees the server's.
    assert all(server.client.get(f"/api/sessions/churn-{i}").status_code == 200 for i in range(0, rounds, 10))
    assert sql(server.db_path, "PRAGMA journal_mode") == [("wal",)]
    assert server.client.post("/api/sessions", json={"id": "after-churn"}).status_code == 201
    assert sql(server.db_path, "SELECT COUNT(*) FROM sessions WHERE id = 'after-churn'") == [(1,)]
    assert integrity(server.db_path) == "ok"
    assert lineage_problems(server.db_path) == []
    assert log_trouble(server) == []
    print(f"\nopen/close churn: {rounds} connections opened and closed by another process, "
          f"{len(traffic.reads)} reads and {len(traffic.writes)} writes served meanwhile, none failed")


def test_upstream_sessiondb_opening_and_closing_the_file(server: RunningServer, tmp_path: Path) -> None:
    """The same with real Hermes's own SessionDB (schema checks on open)."""
    from tests.support.upstream import upstream_bin

    oracle = upstream_bin("python")
    seed(server)
    script = (
        "import os, sys; from pathlib import Path\n"
        "home = Path(sys.argv[1]); os.environ['HERMES_HOME'] = str(home)\n"
        "from hermes_state import SessionDB\n"
        "for i in range(15):\n"
        "    db = SessionDB(db_path=home / 'state.db')\n"
        "    db.get_session('other-0')\n"
        "    if i % 5 == 0: db.create_session(f'upstream-{i}', 'cli')\n"
        "    db.close()\n"
        "print('done')\n"
    )
    with Traffic(server, "upstream") as traffic:
        run = subprocess.run([str(oracle), "-c", script, str(server.home)], capture_output=True, text=True,
                             timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert run.stdout.strip().splitlines()[-1:] == ["done"], run.stdout + run.stderr
    assert [s for *_, s in traffic.reads + traffic.writes if s >= 300] == []
    assert all(server.client.get(f"/api/sessions/upstream-{i}").status_code == 200 for i in (0, 5, 10))
    assert sql(server.db_path, "PRAGMA journal_mode") == [("wal",)]
    assert integrity(server.db_path) == "ok"
    assert log_trouble(server) == []
