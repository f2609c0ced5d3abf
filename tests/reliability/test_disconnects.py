"""A hundred streaming clients that hang up mid-turn: every accepted turn is still persisted.

The script agent makes each turn take 0.4 s between two deltas. A hundred
clients start a streamed turn each (one session per client), read until the
first `assistant.delta`, then vanish: half close normally, half reset the
connection (SO_LINGER 0). Afterwards:

- no turn is left running (`active_agents` back to 0) and the process holds no
  more sockets than before (no leaked tasks or connections);
- the log has no traceback and no ERROR record;
- every turn whose stream was accepted (200) is stored whole: the user row, the
  assistant row with the full reply, `message_count` 2, `api_call_count` 1
  (upstream kept between 7 and 45 of 50);
- the database passes `integrity_check` and the lineage checks.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.db import integrity, lineage_problems, sql
from tests.support.server import KEY, RunningServer, log_trouble, start_with_script

CLIENTS = 100
REPLY = "first second"


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[RunningServer]:
    script = {"turns": [{"steps": [{"delta": "first "}, {"sleep": 0.4}, {"delta": "second"}]}]}
    srv = start_with_script(tmp_path / "hermes", script)
    yield srv
    srv.stop()


def open_sockets(pid: int) -> int:
    """Sockets the process holds (SQLite files, opened lazily per reader thread, are not counted)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # closed while we looked
    return count


async def stream_then_vanish(port: int, session_id: str, reset: bool) -> int:
    """Start a streamed turn, read up to the first delta, then disappear. Returns the HTTP status."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"message": f"turn for {session_id}"}).encode()
    writer.write(
        f"POST /api/sessions/{session_id}/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        .encode() + body
    )
    await writer.drain()
    seen = b""
    while b"assistant.delta" not in seen:
        chunk = await asyncio.wait_for(reader.read(4096), 20)
        if not chunk:
            break
        seen += chunk
    status = int(seen.split(b" ", 2)[1]) if seen.startswith(b"HTTP/1.1 ") else 0
    if reset:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()
    return status


async def hundred_clients(port: int) -> list[int]:
    return list(await asyncio.gather(*(stream_then_vanish(port, f"dis-{i}", reset=i % 2 == 0)
                                       for i in range(CLIENTS))))


def test_hundred_clients_disconnecting_mid_stream(slow_server: RunningServer) -> None:
    srv = slow_server
    for i in range(CLIENTS):
        assert srv.client.post("/api/sessions", json={"id": f"dis-{i}"}).status_code == 201
    sockets_before = open_sockets(srv.process.pid)

    statuses = asyncio.run(hundred_clients(srv.port))
    assert statuses == [200] * CLIENTS  # every stream was accepted before its client vanished

    deadline = time.monotonic() + 20
    while srv.client.get("/health/detailed").json()["active_agents"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert srv.client.get("/health/detailed").json()["active_agents"] == 0
    time.sleep(0.3)
    assert open_sockets(srv.process.pid) <= sockets_before  # no connection left behind

    rows = sql(srv.db_path, "SELECT s.id, s.message_count, s.api_call_count,"
                              " (SELECT group_concat(m.role || ':' || m.content, '|') FROM messages m"
                              "  WHERE m.session_id = s.id ORDER BY m.id) FROM sessions s WHERE s.id LIKE 'dis-%'")
    assert len(rows) == CLIENTS
    for sid, count, calls, transcript in rows:
        assert (count, calls, transcript) == (2, 1, f"user:turn for {sid}|assistant:{REPLY}"), sid
    assert integrity(srv.db_path) == "ok"
    assert lineage_problems(srv.db_path) == []
    assert log_trouble(srv) == []
    print(f"\ndisconnects: {CLIENTS} streams cut mid-turn ({CLIENTS // 2} reset, {CLIENTS // 2} closed), "
          f"{len(rows)} of {CLIENTS} turns stored whole, no task or socket left")
