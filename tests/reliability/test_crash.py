"""SIGKILL in the middle of a mixed write load, then a restart: nothing acknowledged is lost.

Four clients each work on their own sessions, one request at a time: create
(with a title), retitle, chat, fork, delete. Every answer is recorded. The
server is killed at an arbitrary moment, restarted on the same state.db, and
then:

- `PRAGMA integrity_check` says ok, and no lineage invariant is broken;
- every write that got a 2xx is there (its row, its title, its two chat rows),
  and every delete that got a 2xx is gone;
- nothing else is: no session, title or message that no request asked for.
  Only the one request per client that was in flight when the process died may
  have landed or not (a chat turn is two transactions, so its user row may stand
  alone).

Three kill/restart cycles run on one database, at different moments.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.db import integrity, lineage_problems, sql
from tests.support.server import KEY, RunningServer, start_server

pytestmark = pytest.mark.slow

WORKERS = 4
KILL_AFTER = (0.6, 1.0, 1.4)  # seconds of load before each SIGKILL


@dataclass
class Op:
    kind: str  # create | patch | chat | fork | delete
    session: str
    value: str = ""  # title, chat text, or fork id
    outcome: str = "unknown"  # ok | refused | server error N | unknown (in flight when the server died)


@dataclass
class Worker:
    name: str
    ops: list[Op] = field(default_factory=list)
    live: list[str] = field(default_factory=list)  # own sessions believed to exist

    def next_op(self, n: int, rng: random.Random) -> Op:
        if not self.live or n % 6 == 0:
            return Op("create", f"{self.name}-s{n}", f"{self.name} title {n}")
        target = rng.choice(self.live)
        kind = rng.choice(("patch", "chat", "chat", "fork", "delete") if len(self.live) > 2 else ("patch", "chat"))
        value = {"patch": f"{self.name} retitled {n}", "chat": f"{self.name} says {n}",
                 "fork": f"{self.name}-f{n}", "delete": ""}[kind]
        return Op(kind, target, value)

    def send(self, client: httpx.Client, op: Op) -> httpx.Response:
        if op.kind == "create":
            return client.post("/api/sessions", json={"id": op.session, "title": op.value})
        if op.kind == "patch":
            return client.patch(f"/api/sessions/{op.session}", json={"title": op.value})
        if op.kind == "chat":
            return client.post(f"/api/sessions/{op.session}/chat", json={"message": op.value})
        if op.kind == "fork":
            return client.post(f"/api/sessions/{op.session}/fork", json={"id": op.value, "title": op.value})
        return client.delete(f"/api/sessions/{op.session}")

    def run(self, url: str, stop: threading.Event, seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=10) as client:
            n = len(self.ops)
            while not stop.is_set():
                op = self.next_op(n, rng)
                n += 1
                self.ops.append(op)
                try:
                    answer = self.send(client, op)
                except httpx.HTTPError:
                    return  # the server is gone; this op stays "unknown"
                op.outcome = ("ok" if answer.status_code < 300 else
                              "refused" if answer.status_code < 500 else f"server error {answer.status_code}")
                if op.outcome == "ok":
                    if op.kind in ("create", "fork"):
                        self.live.append(op.value if op.kind == "fork" else op.session)
                    elif op.kind == "delete":
                        self.live.remove(op.session)


def load_then_kill(server: RunningServer, workers: list[Worker], seconds: float, cycle: int) -> None:
    stop = threading.Event()
    threads = [threading.Thread(target=w.run, args=(server.url, stop, cycle * 100 + i))
               for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    stop.set()
    for thread in threads:
        thread.join(20)
    server.client.close()


def expected_state(workers: list[Worker]) -> dict[str, Any]:
    """What must be in state.db, and what may be, from the recorded answers."""
    must: dict[str, dict[str, Any]] = {}  # session -> {"titles": allowed titles, "chats": texts answered}
    gone: set[str] = set()
    maybe_sessions: set[str] = set()
    for worker in workers:
        for op in worker.ops:
            if op.outcome == "refused":
                continue
            sure = op.outcome == "ok"
            if op.kind in ("create", "fork"):
                sid = op.session if op.kind == "create" else op.value
                if sure:
                    must[sid] = {"titles": {op.value}, "chats": []}
                    gone.discard(sid)
                else:
                    maybe_sessions.add(sid)
            elif op.kind == "patch" and op.session in must:
                if sure:
                    must[op.session]["titles"] = {op.value}
                else:
                    must[op.session]["titles"].add(op.value)
            elif op.kind == "chat" and sure and op.session in must:
                must[op.session]["chats"].append(op.value)
            elif op.kind == "delete":
                if sure:
                    must.pop(op.session, None)
                    gone.add(op.session)
                else:
                    maybe_sessions.add(op.session)
                    must.pop(op.session, None)
    sent = {op.value for w in workers for op in w.ops if op.kind == "chat" and op.outcome != "refused"}
    return {"must": must, "gone": gone, "maybe_sessions": maybe_sessions, "sent_chats": sent}


def check_database(db_path: Path, state: dict[str, Any]) -> None:
    assert integrity(db_path) == "ok"
    assert lineage_problems(db_path) == []
    rows = dict(sql(db_path, "SELECT id, title FROM sessions"))
    for sid, want in state["must"].items():
        assert sid in rows, f"acknowledged session {sid} lost"
        assert rows[sid] in want["titles"], f"{sid}: title {rows[sid]!r}, acknowledged {want['titles']}"
        texts = [t for (t,) in sql(db_path, "SELECT content FROM messages WHERE session_id = ? AND role = 'user'", sid)]
        for chat in want["chats"]:
            assert chat in texts, f"{sid}: acknowledged turn {chat!r} lost"
            assert sql(db_path, "SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'assistant'"
                                  " AND content LIKE ?", sid, f"ECHO-REPLY to: {chat} [%")[0][0] >= 1
    for sid in state["gone"]:
        assert sid not in rows, f"acknowledged delete of {sid} undone"
    unexplained = set(rows) - set(state["must"]) - state["maybe_sessions"]
    assert not unexplained, f"sessions nobody created: {sorted(unexplained)}"
    # Every user row carries a text some client sent (a fork holds copies of its source's rows).
    for sid, content in sql(db_path, "SELECT session_id, content FROM messages WHERE role = 'user'"):
        assert content in state["sent_chats"], f"user row nobody sent: {sid} {content!r}"


def test_sigkill_under_write_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    workers = [Worker(f"w{i}") for i in range(WORKERS)]
    server = start_server(home)
    try:
        for cycle, seconds in enumerate(KILL_AFTER):
            load_then_kill(server, workers, seconds, cycle)
            server = start_server(home)  # restart on the same state.db
            check_database(home / "state.db", expected_state(workers))
            for worker in workers:  # carry on from what the restarted server really has
                worker.live = [s for s in worker.live if server.client.get(f"/api/sessions/{s}").status_code == 200]
        assert [op for w in workers for op in w.ops if op.outcome.startswith("server error")] == []
        acknowledged = sum(op.outcome == "ok" for w in workers for op in w.ops)
        assert acknowledged > 100  # the load really ran
        in_flight = sum(op.outcome == "unknown" for w in workers for op in w.ops)
        print(f"\nsigkill: {len(KILL_AFTER)} kills, {acknowledged} acknowledged writes checked, "
              f"{in_flight} in flight at a kill")
        assert server.client.get("/api/sessions?limit=200").status_code == 200
    finally:
        server.stop()
