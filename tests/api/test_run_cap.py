"""The cap on live agent turns: 10 by default, shared by every agent route, refused only by three."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.runs import submit, wait_status
from tests.support.server import start_server

pytestmark = pytest.mark.slow

TOO_MANY = {"error": {"message": "Too many concurrent runs (max 10)", "type": "rate_limit_error", "param": None,
                      "code": "rate_limit_exceeded"}}


def test_ten_live_runs_then_429_on_runs_responses_and_completions(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--agent-delay", "3")
    try:
        runs = [submit(server.client, {"input": f"run {i}"}) for i in range(10)]
        for path, body in (("/v1/runs", {"input": "x"}), ("/v1/responses", {"input": "x"}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]})):
            refused = server.client.post(path, json=body)
            assert refused.status_code == 429, path
            assert refused.json() == TOO_MANY
            assert refused.headers["retry-after"] == "1"
        # The cap comes before the body is read: even bad JSON gets 429 while full.
        assert server.client.post("/v1/runs", content=b"{").status_code == 429
        # A stopped run frees its slot once its turn has ended.
        server.client.post(f"/v1/runs/{runs[0]}/stop")
        assert wait_status(server.client, runs[0])["status"] == "cancelled"
        assert server.client.post("/v1/runs", json={"input": "x"}).status_code == 202
        # Full again; session chat counts but is never refused.
        assert server.client.post("/v1/runs", json={"input": "x"}).status_code == 429
        server.client.post("/api/sessions", json={"id": "chatty"}).raise_for_status()
        assert server.client.post("/api/sessions/chatty/chat", json={"message": "hi"}, timeout=10).status_code == 200
    finally:
        server.stop()


def test_session_chat_turns_count(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--agent-delay", "2", "--max-concurrent-runs", "2")
    try:
        for name in ("a", "b"):
            server.client.post("/api/sessions", json={"id": name}).raise_for_status()
        workers = [threading.Thread(target=server.client.post, args=(f"/api/sessions/{name}/chat",),
                                    kwargs={"json": {"message": "hi"}}) for name in ("a", "b")]
        for worker in workers:
            worker.start()
        time.sleep(0.6)
        assert server.client.post("/v1/runs", json={"input": "x"}).status_code == 429
        for worker in workers:
            worker.join()
        assert server.client.post("/v1/runs", json={"input": "x"}).status_code == 202
    finally:
        server.stop()


def test_zero_disables_the_cap(tmp_path: Path) -> None:
    server = start_server(tmp_path / "home", "--agent-delay", "2", "--max-concurrent-runs", "0")
    try:
        assert all(server.client.post("/v1/runs", json={"input": "x"}).status_code == 202 for _ in range(12))
    finally:
        server.stop()


def test_a_burst_gets_exactly_the_cap(tmp_path: Path) -> None:
    """Thirty submits at once with large bodies: requests still reading their body count too."""
    server = start_server(tmp_path / "home", "--agent-delay", "5")

    async def burst() -> list[int]:
        async with httpx.AsyncClient(base_url=server.url, headers=dict(server.client.headers), timeout=30,
                                     limits=httpx.Limits(max_connections=40)) as client:
            answers = await asyncio.gather(*(client.post(path, json=body) for path, body in [
                ("/v1/runs", {"input": "x" * 200_000})] * 20 + [
                ("/v1/responses", {"input": "y" * 200_000})] * 10))
            return [a.status_code for a in answers]

    try:
        statuses = asyncio.run(burst())
        assert sum(s in (200, 202) for s in statuses) == 10 and statuses.count(429) == 20
    finally:
        server.stop()
