"""Hostile request heads and broken bodies, sent over raw sockets.

- An endless head is cut: of 1 KB header lines, at the 129th header line (0.19.0's count);
  of one value's leading blanks (which no other limit counts), once past the 2 MiB head
  limit. A 400 envelope, then the connection closes within seconds, however fast the
  client sends.
- A 1 MB header gets 400 (httpx reads the answer, not a reset); so does a 9 KB target.
- Heads under the limits (four 8,190-byte values, an 8,000-byte query) are served as usual.
- Twelve connections sending endless heads as fast as they can: the server's memory does
  not grow with the bytes sent (before the limits: about 10 MB per connection).
- A broken chunked body, and a client leaving mid-body: uvicorn's 400, or nothing; in the
  log a 499 access line, no 500 and no traceback.

After each: the server answers /health, a write before and after is stored, integrity,
lineage and full-text counts hold, and the log has no traceback or ERROR record. Each
limit at its boundary, in both answer modes and against 0.19.0 itself, and the flags that
move them: tests/api/test_head_limits.py.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.http import envelope_problem
from tests.support.server import KEY, RunningServer, assert_sound, start_server

HEAD_LIMIT = 2 * 1024 * 1024
LINE = b"X-Filler: " + b"a" * 1012 + b"\r\n"  # 1 KB
# The endless heads: what is sent again and again after the head's start, the code it is refused
# with, and after how many bytes sent (at the least; the answer may come up to one bound later).
ENDLESS = {
    "1 KB header lines": (LINE, "too_many_headers", 128 * len(LINE)),
    "one value's leading blanks": (b" " * 16384, "request_head_too_large", HEAD_LIMIT),
}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("heads") / "hermes")
    assert server.client.post("/api/sessions", json={"id": "before-heads"}).status_code == 201
    yield server
    server.stop()


def connect(server: RunningServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    return sock


def read_all(sock: socket.socket, limit: float = 10.0) -> bytes:
    data, deadline = b"", time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return data


def parse(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))
    return status, json.loads(body[:length])


def assert_healthy(server: RunningServer, tag: str) -> None:
    assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200
    assert server.client.post("/api/sessions", json={"id": f"after-{tag}"}).status_code == 201
    assert_sound(server, ["before-heads", f"after-{tag}"])


@pytest.mark.parametrize("kind", ENDLESS)
def test_an_endless_head_is_cut(srv: RunningServer, kind: str) -> None:
    block, code, bound = ENDLESS[kind]
    sock = connect(srv)
    start = b"X-Pad:" if block.isspace() else b""
    sock.sendall(start)
    sent, answer_at = len(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") + len(start), None
    started = time.monotonic()
    try:
        while time.monotonic() - started < 30:
            sock.sendall(block)
            sent += len(block)
            # A short wait per block, so that what was sent when the answer came is what it was cut at.
            if answer_at is None and select.select([sock], [], [], 0.002)[0]:
                answer_at = sent
                answer = sock.recv(65536)
    except OSError:
        pass  # the server closed the connection: the client cannot send on
    closed_after = time.monotonic() - started
    sock.close()
    assert answer_at is not None
    status, body = parse(answer)
    assert (status, body["error"]["code"]) == (400, code)
    print(f"\nendless head of {kind}: answered 400 {code} after {answer_at} bytes sent (bound {bound}); "
          f"connection closed after {closed_after:.1f} s and {sent / 1e6:.1f} MB sent")
    assert bound < answer_at <= 2 * bound
    assert closed_after < 10
    assert_healthy(srv, f"endless-{code}")


def test_one_megabyte_header_and_a_long_target_get_400(srv: RunningServer) -> None:
    r = httpx.get(f"{srv.url}/health", headers={"X-Big": "a" * (1 << 20)}, timeout=10)
    assert envelope_problem(r, 400, "request_header_too_large") is None
    assert r.headers["connection"] == "close"
    r = httpx.get(f"{srv.url}/health?{'a' * 9000}", timeout=10)
    assert envelope_problem(r, 400, "request_target_too_long") is None
    assert_healthy(srv, "big")


def test_heads_under_the_limits_are_served(srv: RunningServer) -> None:
    headers = {f"X-Large-{i}": "b" * 8190 for i in range(4)}
    assert httpx.get(f"{srv.url}/health", headers=headers, timeout=10).status_code == 200
    assert httpx.get(f"{srv.url}/health?{'q' * 8000}", timeout=10).status_code == 200
    assert_healthy(srv, "under")


def rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))


def flood(server: RunningServer, seconds: float, sent: list[int]) -> None:
    """Send an endless head as fast as possible until the server hangs up (or `seconds` pass)."""
    sock = connect(server)
    block = LINE * 64
    total, deadline = 0, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            sock.sendall(block)
            total += len(block)
    except OSError:
        pass
    finally:
        sock.close()
        sent.append(total)


def test_memory_does_not_grow_with_the_bytes_sent(srv: RunningServer) -> None:
    pid = srv.process.pid
    rss = [rss_kb(pid)]
    sent: list[int] = []
    for _ in range(2):
        threads = [threading.Thread(target=flood, args=(srv, 10.0, sent)) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        time.sleep(0.5)
        rss.append(rss_kb(pid))
    growth_mb = (rss[-1] - rss[0]) / 1024
    print(f"\nendless heads: 24 connections, {sum(sent) / 1e6:.0f} MB sent; server RSS "
          f"{' -> '.join(f'{kb / 1024:.1f}' for kb in rss)} MB ({growth_mb:+.1f} MB)")
    assert growth_mb < 8  # without the limits: about 10 MB per connection, 240 MB here
    assert_healthy(srv, "memory")


def test_a_broken_body_or_a_client_leaving_is_not_a_server_error(srv: RunningServer) -> None:
    auth = f"Authorization: Bearer {KEY}\r\n".encode()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(b"POST /api/sessions HTTP/1.1\r\nHost: x\r\n" + auth +
                     b"Transfer-Encoding: chunked\r\n\r\nzz\r\n")
        assert read_all(sock).startswith(b"HTTP/1.1 400 ")
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(b"POST /api/sessions HTTP/1.1\r\nHost: x\r\n" + auth +
                     b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\": \"le")
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while srv.log().count("POST /api/sessions 499") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    access = [line for line in srv.log().splitlines() if "hermes_server.access: POST /api/sessions" in line]
    assert sum(" 499 " in line for line in access) == 2
    assert not any(" 500 " in line for line in access)
    assert_healthy(srv, "bodies")
