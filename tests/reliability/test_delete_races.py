"""Deleting a session while other requests on it run: fork, chat and patch racing a delete.

Each race is repeated at many offsets (the delete sent that long after, or before, the
other request), so that it lands between every pair of their steps. What must hold:
no 5xx at all; a fork answers 201 or 404 `session_not_found` (0.19.0 answered a fork
whose source vanished with a FOREIGN KEY 500); every 201 fork exists; no message row
without its session; integrity, counters and full-text counts hold; no traceback.

Two outcomes are faithful hazards, kept on purpose and counted: a fork racing a delete
may answer 201 with a partial copy, and a chat turn still running re-creates the session
deleted under it (docs/differences.md, docs/testing-connectors.md).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.db import sql
from tests.support.http import envelope_problem
from tests.support.server import RunningServer, assert_sound, start_with_script

pytestmark = pytest.mark.slow

OFFSETS_MS = [(k - 4) * 0.5 for k in range(24)]  # the delete from 2 ms before to 9.5 ms after
ROUNDS = 3
SOURCE_MESSAGES = 40
TURN_SECONDS = 0.02
# A turn takes TURN_SECONDS and two writes: its deletes land before it, during it and after it.
CHAT_OFFSETS_MS = [k * 1.2 - 2 for k in range(24)]


@pytest.fixture(scope="module")
def racing_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server whose chat turns take TURN_SECONDS, over sources with SOURCE_MESSAGES messages each."""
    root = tmp_path_factory.mktemp("races")
    transcript = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
                  for i in range(SOURCE_MESSAGES)]
    sources = [{"id": f"src-{r}-{k}", "title": f"source {r} {k}", "messages": transcript}
               for r in range(ROUNDS) for k in range(len(OFFSETS_MS))]
    fixture = root / "sources.json"
    fixture.write_text(json.dumps({"sessions": sources}))
    script = {"turns": [{"steps": [{"delta": "one "}, {"sleep": TURN_SECONDS}, {"delta": "two"}]}]}
    srv = start_with_script(root / "hermes", script, "--fixture", str(fixture))
    yield srv
    srv.stop()


async def _pair(client: httpx.AsyncClient, first: tuple[str, str, Any], second: tuple[str, str, Any],
                offset_ms: float) -> tuple[httpx.Response, httpx.Response]:
    """Send `first`, and `second` `offset_ms` later (a negative offset: `second` goes first)."""
    async def later(request: tuple[str, str, Any], delay_ms: float) -> httpx.Response:
        await asyncio.sleep(max(delay_ms, 0.0) / 1000)
        method, path, body = request
        return await client.request(method, path, json=body)

    a, b = await asyncio.gather(later(first, -offset_ms), later(second, offset_ms))
    return a, b


async def _races(server: RunningServer, make: Any, offsets: list[float]
                 ) -> list[tuple[float, httpx.Response, httpx.Response]]:
    headers = {"Authorization": f"Bearer {server.key}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as client:
        await asyncio.gather(*(client.get("/health") for _ in range(2)))  # both connections open
        out = []
        for r in range(ROUNDS):
            for k, offset in enumerate(offsets):
                first, second = make(r, k)
                out.append((offset, *await _pair(client, first, second, offset)))
        return out


def _no_5xx(results: list[tuple[float, httpx.Response, httpx.Response]]) -> list[str]:
    return [f"{offset} ms: {resp.request.method} {resp.request.url.path} {resp.status_code} {resp.text[:200]}"
            for offset, *answers in results for resp in answers if resp.status_code >= 500]


def test_fork_racing_delete_of_its_source(racing_server: RunningServer) -> None:
    srv = racing_server
    results = asyncio.run(_races(srv, lambda r, k: (
        ("POST", f"/api/sessions/src-{r}-{k}/fork", {"session_id": f"fork-{r}-{k}"}),
        ("DELETE", f"/api/sessions/src-{r}-{k}", None)), OFFSETS_MS))
    assert _no_5xx(results) == []
    forks = Counter(fork.status_code for _, fork, _ in results)
    assert set(forks) <= {201, 404}, forks
    assert {delete.status_code for _, _, delete in results} == {200}
    created, partial = [], 0
    for _, fork, _ in results:
        if fork.status_code == 404:
            assert envelope_problem(fork, 404, "session_not_found") is None
            continue
        child = fork.json()["session"]["id"]
        created.append(child)
        partial += sql(srv.db_path, "SELECT COUNT(*) FROM messages WHERE session_id = ?", child)[0][0] \
            < SOURCE_MESSAGES
    print(f"\nfork racing delete: {len(results)} races at {len(OFFSETS_MS)} offsets: {forks[201]} × 201 "
          f"({partial} with a partial copy), {forks[404]} × 404, 0 × 5xx")
    assert_sound(srv, created)


def test_chat_racing_delete(racing_server: RunningServer) -> None:
    srv = racing_server
    for r in range(ROUNDS):
        for k in range(len(CHAT_OFFSETS_MS)):
            assert srv.client.post("/api/sessions", json={"id": f"chat-{r}-{k}"}).status_code == 201
    results = asyncio.run(_races(srv, lambda r, k: (
        ("POST", f"/api/sessions/chat-{r}-{k}/chat", {"message": "hello"}),
        ("DELETE", f"/api/sessions/chat-{r}-{k}", None)), CHAT_OFFSETS_MS))
    assert _no_5xx(results) == []
    chats = Counter(chat.status_code for _, chat, _ in results)
    assert set(chats) <= {200, 404}, chats
    for _, chat, _ in results:
        if chat.status_code == 404:
            assert envelope_problem(chat, 404, "session_not_found") is None
    recreated = sql(srv.db_path, "SELECT COUNT(*) FROM sessions WHERE id LIKE 'chat-%'")[0][0]
    print(f"\nchat racing delete: {len(results)} races: {chats[200]} × 200, {chats[404]} × 404, 0 × 5xx; "
          f"{recreated} sessions re-created by the turn running under the delete")
    assert_sound(srv)


def test_fork_delete_patch_and_chat_on_one_session(racing_server: RunningServer) -> None:
    """All four at once, in a shuffled order with shuffled small gaps, 24 times."""
    srv = racing_server
    rng = random.Random(15)

    async def scenario() -> list[httpx.Response]:
        headers = {"Authorization": f"Bearer {srv.key}"}
        async with httpx.AsyncClient(base_url=srv.url, headers=headers, timeout=30) as client:
            await asyncio.gather(*(client.get("/health") for _ in range(4)))
            answers: list[httpx.Response] = []
            for k in range(24):
                sid = f"mix-{k}"
                assert (await client.post("/api/sessions", json={"id": sid, "title": f"mix {k}"})).status_code == 201
                assert (await client.post(f"/api/sessions/{sid}/chat", json={"message": "first"})).status_code == 200
                requests = [("POST", f"/api/sessions/{sid}/fork", {"session_id": f"mix-fork-{k}"}),
                            ("DELETE", f"/api/sessions/{sid}", None),
                            ("PATCH", f"/api/sessions/{sid}", {"title": f"mix {k} renamed", "end_reason": "done"}),
                            ("POST", f"/api/sessions/{sid}/chat", {"message": "second"})]
                rng.shuffle(requests)

                async def send(request: tuple[str, str, Any], delay: float) -> httpx.Response:
                    await asyncio.sleep(delay)
                    return await client.request(request[0], request[1], json=request[2])

                answers += await asyncio.gather(*(send(req, rng.uniform(0, 0.006)) for req in requests))
            return answers

    answers = asyncio.run(scenario())
    statuses = Counter(f"{a.request.method} {a.status_code}" for a in answers)
    assert [a for a in answers if a.status_code >= 500] == []
    for answer in answers:
        if answer.status_code == 404:
            assert envelope_problem(answer, 404, "session_not_found") is None
    assert {a.status_code for a in answers} <= {200, 201, 404}, statuses
    print(f"\nfork, delete, patch and chat on one session, 24 times: {dict(statuses)}")
    forks = [a.json()["session"]["id"] for a in answers if a.request.method == "POST" and a.status_code == 201]
    assert_sound(srv, forks)
