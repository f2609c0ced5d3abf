"""Clients that drop a run's event stream, or a streamed response, mid-turn: no turn is lost.

Twenty runs and twenty streamed responses, each turn 0.4 s between two deltas (script
agent). Each client reads up to its first delta, then vanishes (half close normally,
half reset the connection). Afterwards every run is `completed` with the whole reply
stored in state.db, its event queue is gone (a later subscriber is told the run is
unknown, as upstream does), every response is stored `completed`, no turn is left
running, no socket is left open, and the log has no traceback.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.test_disconnects import open_sockets
from tests.support.db import integrity, sql
from tests.support.runs import submit, wait_status
from tests.support.server import KEY, RunningServer, log_trouble, start_with_script

CLIENTS = 20
REPLY = "first second"


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[RunningServer]:
    script = {"turns": [{"steps": [{"delta": "first "}, {"sleep": 0.4}, {"delta": "second"}]}]}
    srv = start_with_script(tmp_path / "hermes", script, "--max-concurrent-runs", "0")
    yield srv
    srv.stop()


async def read_then_vanish(port: int, request: bytes, marker: bytes, reset: bool) -> bytes:
    """Send `request`, read until `marker`, then disappear; returns what was read."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    seen = b""
    while marker not in seen:
        chunk = await asyncio.wait_for(reader.read(4096), 20)
        if not chunk:
            break
        seen += chunk
    if reset:
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()
    return seen


def _events_request(run_id: str) -> bytes:
    return (f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n\r\n"
            .encode())


def _response_request(text: str) -> bytes:
    body = json.dumps({"input": text, "stream": True}).encode()
    return (f"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


async def _all(port: int, run_ids: list[str]) -> list[bytes]:
    runs = [read_then_vanish(port, _events_request(r), b"message.delta", i % 2 == 0) for i, r in enumerate(run_ids)]
    responses = [read_then_vanish(port, _response_request(f"resp {i}"), b"response.output_text.delta", i % 2 == 1)
                 for i in range(CLIENTS)]
    return list(await asyncio.gather(*runs, *responses))


def test_dropped_run_streams_and_response_streams_lose_no_turn(slow_server: RunningServer) -> None:
    srv = slow_server
    run_ids = [submit(srv.client, {"input": f"run {i}"}) for i in range(CLIENTS)]
    sockets_before = open_sockets(srv.process.pid)  # the test client's own connection included
    seen = asyncio.run(_all(srv.port, run_ids))
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in seen)

    for i, run_id in enumerate(run_ids):
        status = wait_status(srv.client, run_id)
        assert (status["status"], status["output"]) == ("completed", REPLY), run_id
        rows = srv.client.get(f"/api/sessions/{run_id}/messages").json()["data"]
        assert [(r["role"], r["content"]) for r in rows] == [("user", f"run {i}"), ("assistant", REPLY)]
    assert srv.client.get(f"/v1/runs/{run_ids[0]}/events").status_code == 404  # the queue went with its client

    deadline = time.monotonic() + 20
    while srv.client.get("/health/detailed").json()["active_agents"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert srv.client.get("/health/detailed").json()["active_agents"] == 0
    stored = sql(srv.home / "response_store.db", "SELECT data FROM responses")
    statuses = [json.loads(data)["response"]["status"] for (data,) in stored]
    assert statuses == ["completed"] * CLIENTS
    texts = {json.loads(data)["response"]["output"][-1]["content"][0]["text"] for (data,) in stored}
    assert texts == {REPLY}
    time.sleep(0.3)
    assert open_sockets(srv.process.pid) <= sockets_before
    assert integrity(srv.db_path) == "ok"
    assert log_trouble(srv) == []
