"""Storage that fails under a running server: a full disk, a read-only flip, and the injected kinds.

- Full disk: HERMES_HOME on a real 4 MB tmpfs, almost filled by a file, then filled to
  ENOSPC by the workload itself; the file is removed to end the condition.
- Read-only flip: state.db and its WAL made immutable (`chattr +i`) under the running
  server, then mutable again.
- Injected: `disk_full`, `read_only`, `io_error` faults, which need neither root nor a mount.

Each workload round writes (a create with a chosen id, a retitle, a fork) and reads
(the session, the list, a transcript). Afterwards: no text/plain answer and no 5xx other
than the 503 envelope; every refused write is that envelope, naming the cause, and left
nothing (its id is absent); every read answered 200; writes work again without a
restart; every acknowledged write is present; integrity, lineage and full-text counts
hold; the log names the condition once when it starts and once when it clears, with no
traceback.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.db import missing_sessions, sql
from tests.support.http import envelope_problem
from tests.support.server import RunningServer, assert_sound, start_server

pytestmark = pytest.mark.slow

FULL = "database or disk is full"
IO_ERROR = "disk I/O error"
READ_ONLY = "database is read-only"
STARTS = "state.db refuses writes"
CLEARS = "state.db accepts writes again"
NOT_STORED = "this turn is answered but not stored whole"
PROMPT = "p" * 4000  # makes each create take room, so the workload fills the disk


@dataclass
class Tally:
    """What the workload saw."""

    acknowledged: list[str] = field(default_factory=list)  # sessions a 2xx create or fork made
    refused: list[str] = field(default_factory=list)  # ids whose create or fork was refused whole
    partial: list[str] = field(default_factory=list)  # forks refused after their child was created
    problems: list[str] = field(default_factory=list)  # answers that are neither success nor the 503
    statuses: Counter[str] = field(default_factory=Counter)
    text_plain: int = 0
    reads: int = 0
    reads_ok: int = 0

    def note(self, what: str, response: httpx.Response, ok: int, reason: str | None,
             *written: str) -> str | None:
        """Count one answer: None when it succeeded, else what its message says was stored.

        A failure must be the 503 envelope naming `reason` and either "nothing was
        written" or one of `written`.
        """
        self.statuses[f"{what} {response.status_code}"] += 1
        if response.headers.get("content-type", "").startswith("text/plain"):
            self.text_plain += 1
        if response.status_code == ok:
            return None
        problem = envelope_problem(response, 503, "session_db_unavailable")
        stored = "?"
        if problem is None:
            message = response.json()["error"]["message"]
            prefix = f"Session database unavailable: {reason}; "
            stored = message.removeprefix(prefix)
            if reason is None or not message.startswith(prefix) or stored not in ("nothing was written", *written):
                problem = f"message {message!r}"
        if problem:
            self.problems.append(f"{what}: {problem}")
        return stored

    @property
    def refusals(self) -> int:
        return sum(n for key, n in self.statuses.items() if key.endswith(" 503"))


def workload_round(c: httpx.Client, tally: Tally, tag: str, reason: str | None) -> bool:
    """One round of writes and reads; True when its create was refused."""
    sid = f"{tag}-create"
    refused = tally.note("create", c.post("/api/sessions", json={"id": sid, "system_prompt": PROMPT}), 201, reason)
    (tally.acknowledged if refused is None else tally.refused).append(sid)
    target = tally.acknowledged[0]
    tally.note("patch", c.patch(f"/api/sessions/{target}", json={"title": f"title {tag}"}), 200, reason)
    fork = f"{tag}-fork"
    # A fork is four writes: refused at a later one, it says what the earlier ones stored.
    stored = tally.note("fork", c.post(f"/api/sessions/{target}/fork", json={"session_id": fork}), 201, reason,
                        "the source session is closed, no fork was created",
                        f"fork {fork} was created without its messages and title",
                        f"fork {fork} was created with its messages but without its title")
    if stored is None:
        tally.acknowledged.append(fork)
    else:
        (tally.partial if stored.startswith(f"fork {fork} was created") else tally.refused).append(fork)
    for path in (f"/api/sessions/{target}", "/api/sessions?limit=20", f"/api/sessions/{target}/messages"):
        tally.reads += 1
        tally.reads_ok += c.get(path).status_code == 200
    return refused is not None


def burst(srv: RunningServer, tally: Tally, tag: str, reason: str | None, clients: int = 24) -> None:
    """`clients` creates at once, so that they share transactions (group commit) under the fault."""
    async def send() -> list[httpx.Response]:
        headers = {"Authorization": f"Bearer {srv.key}"}
        limits = httpx.Limits(max_connections=clients)
        async with httpx.AsyncClient(base_url=srv.url, headers=headers, limits=limits, timeout=30) as client:
            return list(await asyncio.gather(*(
                client.post("/api/sessions", json={"id": f"{tag}-{i}", "system_prompt": PROMPT})
                for i in range(clients))))

    for i, response in enumerate(asyncio.run(send())):
        refused = tally.note("create", response, 201, reason)
        (tally.acknowledged if refused is None else tally.refused).append(f"{tag}-{i}")


def chat_turns(c: httpx.Client, sid: str, count: int) -> list[int]:
    return [c.post(f"/api/sessions/{sid}/chat", json={"message": f"turn {i} under the fault"}).status_code
            for i in range(count)]


def stored_turns(db_path: Path, sid: str) -> int:
    return sql(db_path, "SELECT COUNT(*) FROM messages WHERE session_id = ? AND content LIKE 'turn % under the fault'",
               sid)[0][0]


def assert_outcome(srv: RunningServer, tally: Tally, label: str) -> None:
    """The figures every storage fault must produce (printed for docs/reliability.md)."""
    log = srv.log()
    print(f"\n{label}: {sum(tally.statuses.values())} writes ({tally.refusals} refused with the 503 envelope), "
          f"{tally.reads_ok}/{tally.reads} reads answered, {tally.text_plain} text/plain, "
          f"{len(tally.acknowledged)} acknowledged writes kept, {len(tally.partial)} forks stopped after "
          f"their child; log: {log.count(STARTS)} start, "
          f"{log.count(CLEARS)} clear; {dict(tally.statuses)}")
    assert tally.problems == []
    assert tally.text_plain == 0
    assert tally.refusals > 0
    assert tally.reads_ok == tally.reads
    assert missing_sessions(srv.db_path, tally.refused) == tally.refused  # nothing of a refused write
    assert missing_sessions(srv.db_path, tally.partial) == []  # a fork stopped half-way says so
    assert "Traceback" not in log
    assert_sound(srv, tally.acknowledged)


# -- full disk: a real tmpfs -----------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs, mounted for the test (skipped where this machine cannot mount one)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full-disk test needs root to mount a tmpfs; the injected disk_full test covers the behaviour")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the injected disk_full test covers it")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(path: Path, leave: int) -> None:
    """Write `path` until the disk is full, then give back `leave` bytes."""
    block = b"\0" * 65536
    with open(path, "wb") as handle:
        try:
            while True:
                handle.write(block)
                handle.flush()
        except OSError:
            pass
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(max(size - leave, 0))


def test_full_disk(small_disk: Path) -> None:
    # The home one level below a missing directory: the server's log then goes to /tmp, not the tmpfs.
    srv = start_server(small_disk / "data" / "hermes")
    try:
        c = srv.client
        tally = Tally()
        for tag in ("seed-0", "seed-1"):
            assert not workload_round(c, tally, tag, None)
        assert chat_turns(c, tally.acknowledged[0], 2) == [200, 200]
        fill(small_disk / "filler", leave=256 * 1024)

        refused_in_a_row = 0
        for i in range(400):  # the workload fills the rest, then keeps going under ENOSPC
            refused_in_a_row = refused_in_a_row + 1 if workload_round(c, tally, f"full-{i}", FULL) else 0
            if refused_in_a_row >= 50:
                break
        assert refused_in_a_row >= 50, "the disk never filled up"
        burst(srv, tally, "full-burst", FULL)
        # Chat keeps 0.19.0's rule: answered, not stored, one warning per turn.
        warnings_before = srv.log().count(NOT_STORED)
        assert chat_turns(c, tally.acknowledged[0], 3) == [200, 200, 200]
        assert stored_turns(srv.db_path, tally.acknowledged[0]) == 2
        assert srv.log().count(NOT_STORED) - warnings_before == 3

        (small_disk / "filler").unlink()
        for i in range(3):  # space is back: writes work at once, no restart
            assert not workload_round(c, tally, f"after-{i}", None)
        assert chat_turns(c, tally.acknowledged[0], 1) == [200]
        assert stored_turns(srv.db_path, tally.acknowledged[0]) == 3
        assert_outcome(srv, tally, "full disk")
        assert srv.log().count(CLEARS) >= 1
        assert srv.log().count(STARTS) == srv.log().count(CLEARS)
    finally:
        srv.stop()


# -- read-only flip: chattr +i under the running server ----------------------------------

def _chattr(flag: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True)


def test_read_only_flip(tmp_path: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed; the injected read_only and io_error tests cover the behaviour")
    srv = start_server(tmp_path / "hermes")
    files = (srv.db_path, srv.db_path.with_name("state.db-wal"))
    try:
        c = srv.client
        tally = Tally()
        for tag in ("seed-0", "seed-1"):
            assert not workload_round(c, tally, tag, None)
        assert chat_turns(c, tally.acknowledged[0], 2) == [200, 200]
        flipped = _chattr("+i", *files)
        if flipped.returncode != 0:
            pytest.skip(f"cannot make state.db immutable here ({flipped.stderr.strip()})")

        for i in range(50):
            assert workload_round(c, tally, f"ro-{i}", IO_ERROR)
        burst(srv, tally, "ro-burst", IO_ERROR)
        warnings_before = srv.log().count(NOT_STORED)
        assert chat_turns(c, tally.acknowledged[0], 3) == [200, 200, 200]
        assert srv.log().count(NOT_STORED) - warnings_before == 3

        assert _chattr("-i", *files).returncode == 0
        for i in range(3):
            assert not workload_round(c, tally, f"after-{i}", None)
        assert stored_turns(srv.db_path, tally.acknowledged[0]) == 2
        assert_outcome(srv, tally, "read-only flip")
        assert (srv.log().count(STARTS), srv.log().count(CLEARS)) == (1, 1)
    finally:
        _chattr("-i", *files)  # else the temporary directory could never be removed
        srv.stop()


# -- injected: no root, no mount -------------------------------------------------------

@pytest.fixture
def fault_server(tmp_path: Path) -> Iterator[RunningServer]:
    srv = start_server(tmp_path / "hermes", "--fixture-api")
    yield srv
    srv.stop()


@pytest.mark.parametrize("kind, message", [("disk_full", FULL), ("read_only", READ_ONLY), ("io_error", IO_ERROR)])
def test_injected_storage_faults(fault_server: RunningServer, kind: str, message: str) -> None:
    srv, c = fault_server, fault_server.client
    tally = Tally()
    assert not workload_round(c, tally, "seed", None)
    assert chat_turns(c, tally.acknowledged[0], 1) == [200]

    # Per request: the next two creates are refused, nothing else is.
    assert c.put("/_fixture/faults", json={"route": "session_create", "kind": kind, "times": 2}).status_code == 200
    assert [workload_round(c, tally, f"{kind}-once-{i}", message) for i in range(3)] == [True, True, False]

    # Every write, for a while: the chat turn answers and is not stored; reads go on.
    assert c.put("/_fixture/faults", json={"kind": kind, "duration_ms": 1500}).status_code == 200
    started = time.monotonic()
    assert workload_round(c, tally, f"{kind}-all", message)
    assert chat_turns(c, tally.acknowledged[0], 1) == [200]
    assert stored_turns(srv.db_path, tally.acknowledged[0]) == 1
    time.sleep(max(0.0, 1.6 - (time.monotonic() - started)))
    assert not workload_round(c, tally, f"{kind}-after", None)

    assert_outcome(srv, tally, f"injected {kind}")
    assert srv.log().count(NOT_STORED) == 1
    # one start and one clear around each refused create (the retitle after it writes), and around the outage
    assert (srv.log().count(STARTS), srv.log().count(CLEARS)) == (3, 3)
