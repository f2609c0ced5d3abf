"""The least a session create can cost on this stack, to read hermes-server's create figure against.

    python -m benchmarks.write_floor [--seconds S] [--rounds N]

The app below is raw ASGI on the same uvicorn (uvloop, httptools), doing only what a
create must: parse the JSON body, run the same transaction on a copy of the 10k dataset
(exists check, insert, re-read of the 48-column row, commit, `synchronous=NORMAL`,
never a checkpoint), and answer the same bytes (status, the security headers, the body).
No auth, no validation, no access log, no error mapping, no group commit. It runs in two
shapes: the transaction on one writer thread (hermes-server's design, where the event
loop never waits on SQLite), and on the event loop itself (upstream's). wrk drives each,
and hermes-server, at 1 connection, interleaved over `--rounds`, each on a fresh copy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks import dataset, servers, wrk
from benchmarks.wrk import Call

PORT = 18995
CREATE = Call("POST", "/api/sessions", '{"id": "wf_{n}"}')
_SECURITY = [(b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
             (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
             (b"strict-transport-security", b"max-age=31536000; includeSubDomains"),
             (b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
             (b"x-xss-protection", b"0"), (b"referrer-policy", b"no-referrer")]


class _Floor:
    """The app's state, made when uvicorn imports it in the child process."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(os.environ["WRITE_FLOOR_DB"], isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA wal_autocheckpoint=0")
        self.on_loop = os.environ.get("WRITE_FLOOR_ON_LOOP") == "1"
        self.writer = ThreadPoolExecutor(1)

    def create(self, session_id: str) -> dict[str, Any]:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                conn.execute("INSERT INTO sessions (id, source, model, system_prompt, started_at)"
                             " VALUES (?, 'api_server', 'hermes-agent', NULL, ?)", (session_id, time.time()))
            cursor = conn.cursor()
            cursor.row_factory = None
            cursor.execute("SELECT * FROM sessions WHERE id = ?", (session_id,))
            row = dict(zip([c[0] for c in cursor.description], cursor.fetchone(), strict=True))
        finally:
            conn.execute("COMMIT")
        return row


_floor: _Floor | None = None


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global _floor
    if scope["type"] == "lifespan":
        await receive()  # startup
        _floor = _Floor()
        await send({"type": "lifespan.startup.complete"})
        await receive()  # shutdown
        await send({"type": "lifespan.shutdown.complete"})
        return
    assert _floor is not None
    if scope["method"] != "POST":  # the health probe servers.py waits for
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})
        return
    session_id = json.loads((await receive())["body"])["id"]
    if _floor.on_loop:
        row = _floor.create(session_id)
    else:
        row = await asyncio.get_running_loop().run_in_executor(_floor.writer, _floor.create, session_id)
    body = json.dumps({"object": "hermes.session", "session": row}).encode("ascii")
    await send({"type": "http.response.start", "status": 201, "headers": [
        (b"content-type", b"application/json; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        *_SECURITY]})
    await send({"type": "http.response.body", "body": body})


def _start(kind: str, home: Path) -> servers.Server:
    if kind == "hermes-server":
        return servers.start_hermes(home, PORT)
    log = home.parent / f"{kind}.log"
    process = servers.spawn([sys.executable, "-m", "uvicorn", "benchmarks.write_floor:app", "--port", str(PORT),
                              "--log-level", "warning", "--no-access-log"], log,
                             extra_env={"WRITE_FLOOR_DB": str(home / "state.db"),
                                        "WRITE_FLOOR_ON_LOOP": "1" if kind == "floor, on the loop" else "0"})
    servers.wait_health(f"http://127.0.0.1:{PORT}", process, log)
    return servers.Server(kind, f"http://127.0.0.1:{PORT}", None, process.pid, process=process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_floor", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    kinds = ("floor, writer thread", "floor, on the loop", "hermes-server")
    found: dict[str, list[float]] = {kind: [] for kind in kinds}
    work = Path(tempfile.mkdtemp(prefix="hermes-write-floor-"))
    try:
        for round_no in range(args.rounds):
            for kind in kinds:
                home = work / f"{round_no}-{len(found[kind])}-{kind.split(',')[0]}"
                dataset.copy_to(dataset.cached(10_000), home)
                server = _start(kind, home)
                try:
                    result = wrk.run(server.url, [CREATE], ["-"], tag=f"r{round_no}_", key=server.key,
                                     connections=1, seconds=args.seconds, wrk_path=wrk.ensure_wrk())
                finally:
                    server.stop()
                found[kind].append(result.rps)
                print(f"round {round_no + 1}: {kind:<22} {result.rps:8,.0f} creates/s  p50 {result.p50_ms:.2f} ms",
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for kind, figures in found.items():
        print(f"{kind:<22} best of {args.rounds}: {max(figures):,.0f} creates/s at 1 connection")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
