"""Fifty clients racing for one id or one title: exactly one wins, the losers leave nothing.

All fifty connections are opened first (a health request each), then the fifty
writes are sent together, so they reach the writer while it is busy and share
transactions (group commit). Each round uses fresh ids, and runs three times.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.support.db import sql
from tests.support.server import RunningServer, assert_sound

pytestmark = pytest.mark.slow

CLIENTS = 50
ROUNDS = 3


async def _race(server: RunningServer, requests: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    headers = {"Authorization": f"Bearer {server.key}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, limits=limits, timeout=30) as client:
        await asyncio.gather(*(client.get("/health") for _ in range(CLIENTS)))
        return list(await asyncio.gather(*(client.request(m, p, json=b) for m, p, b in requests)))


def race(server: RunningServer, requests: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
    return asyncio.run(_race(server, requests))


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_fifty_creates_of_one_id(server: RunningServer, round_: int) -> None:
    sid = f"race-id-{round_}"
    answers = race(server, [("POST", "/api/sessions", {"id": sid, "title": f"race id {round_} {i}"})
                            for i in range(CLIENTS)])
    assert Counter(a.status_code for a in answers) == {201: 1, 409: CLIENTS - 1}
    winner = next(a for a in answers if a.status_code == 201).json()["session"]
    for loser in (a for a in answers if a.status_code == 409):
        assert loser.json()["error"]["code"] == "session_exists"
    # one row, carrying the winner's title (a loser's title update never landed)
    assert sql(server.db_path, "SELECT id, title FROM sessions WHERE id = ?", sid) == [(sid, winner["title"])]
    assert sql(server.db_path, "SELECT COUNT(*) FROM sessions WHERE title LIKE ?", f"race id {round_} %") == [(1,)]
    assert_sound(server)


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_fifty_creates_with_one_title(server: RunningServer, round_: int) -> None:
    title = f"race title {round_}"
    ids = [f"race-title-{round_}-{i}" for i in range(CLIENTS)]
    answers = race(server, [("POST", "/api/sessions", {"id": sid, "title": title}) for sid in ids])
    assert Counter(a.status_code for a in answers) == {201: 1, 400: CLIENTS - 1}
    winner = next(a for a in answers if a.status_code == 201).json()["session"]["id"]
    for loser in (a for a in answers if a.status_code == 400):
        assert loser.json()["error"]["code"] == "invalid_title"
        assert loser.json()["error"]["message"] == f"Title already in use by session {winner}"
    rows = sql(server.db_path, f"SELECT id, title FROM sessions WHERE id IN ({','.join('?' * CLIENTS)})", *ids)
    assert rows == [(winner, title)]  # no row left by any loser
    assert_sound(server)


def test_fifty_patches_to_one_title(server: RunningServer) -> None:
    ids = [f"race-patch-{i}" for i in range(CLIENTS)]
    for sid in ids:
        assert server.client.post("/api/sessions", json={"id": sid}).status_code == 201
    answers = race(server, [("PATCH", f"/api/sessions/{sid}", {"title": "race patch title"}) for sid in ids])
    assert Counter(a.status_code for a in answers) == {200: 1, 400: CLIENTS - 1}
    winner = next(a for a in answers if a.status_code == 200).json()["session"]["id"]
    assert sql(server.db_path, "SELECT id FROM sessions WHERE title = 'race patch title'") == [(winner,)]

    assert_sound(server)
