"""0.20.4's message paging on a real server, each behaviour naming its source in
/work/shared/spec/hermes-after-0.19.md: §1.4 "GET /api/sessions/{id}/messages (changed, 0.20.4 paging)"
[R V2 §B.7; V6 test `test_session_messages_default_to_latest_bounded_page`], §4 item 2."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.db import connect, insert_session
from tests.support.server import RunningServer, start_server

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

T0 = 1_700_000_000.0


def _fill(server: RunningServer, session_id: str, count: int) -> None:
    """A session holding `msg 0` … `msg {count-1}`, written as another Hermes process would."""
    server.client.get("/api/sessions?limit=0")  # the server opens state.db lazily
    insert_session(server.db_path, session_id, started_at=T0)
    conn = connect(server.db_path)
    try:
        conn.executemany("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?,?,?,?,1)",
                         [(session_id, "user", f"msg {i}", T0 + i) for i in range(count)])
        conn.execute("UPDATE sessions SET message_count = ? WHERE id = ?", (count, session_id))
    finally:
        conn.close()


@pytest.fixture(scope="module", params=["0.20.4", "0.21.2"])
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("paging") / "hermes", "--hermes-version", request.param)
    _fill(srv, "big", 501)
    _fill(srv, "small", 5)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("old") / "hermes")
    _fill(srv, "big", 501)
    yield srv
    srv.stop()


def _page(server: RunningServer, session_id: str, query: str = "") -> dict[str, Any]:
    answer = server.client.get(f"/api/sessions/{session_id}/messages{query}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _contents(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["data"]]


def test_0_19_0_returns_the_whole_transcript(old: RunningServer) -> None:
    """§1.4: 0.19.0 has no paging: every message, no `pagination`, paging parameters ignored."""
    for query in ("", "?limit=2", "?order=nonsense&limit=-1"):
        body = _page(old, "big", query)
        assert len(body["data"]) == 501 and "pagination" not in body
        assert list(body) == ["object", "session_id", "data"]


def test_default_is_the_latest_500(newer: RunningServer) -> None:
    """V6 test: 501 messages and no parameters → the newest 500, chronological, and the block."""
    body = _page(newer, "big")
    assert list(body) == ["object", "session_id", "data", "pagination"]
    assert body["pagination"] == {"limit": 500, "offset": 0, "order": "latest", "returned": 500}
    assert body["data"][0]["content"] == "msg 1" and body["data"][-1]["content"] == "msg 500"


def test_a_limit_makes_the_default_order_oldest(newer: RunningServer) -> None:
    """V6 test: `?limit=2&offset=1` → messages 1 and 2 (the default order is `oldest` once `limit` is given)."""
    body = _page(newer, "big", "?limit=2&offset=1")
    assert _contents(body) == ["msg 1", "msg 2"]
    assert body["pagination"] == {"limit": 2, "offset": 1, "order": "oldest", "returned": 2}


def test_latest_offset_counts_back_from_the_newest(newer: RunningServer) -> None:
    """V2 §B.7: with `order=latest` the offset counts back from the newest; the page stays chronological."""
    assert _contents(_page(newer, "small", "?limit=2&order=latest")) == ["msg 3", "msg 4"]
    assert _contents(_page(newer, "small", "?limit=2&offset=2&order=latest")) == ["msg 1", "msg 2"]
    assert _contents(_page(newer, "small", "?limit=2&offset=4&order=latest")) == ["msg 0"]
    assert _contents(_page(newer, "small", "?offset=3")) == ["msg 0", "msg 1"]
    past = _page(newer, "small", "?limit=2&offset=9&order=latest")
    assert past["data"] == [] and past["pagination"]["returned"] == 0
    assert _contents(_page(newer, "small", "?order=oldest&offset=3")) == ["msg 3", "msg 4"]


def test_limit_is_capped_at_500(newer: RunningServer) -> None:
    """V2 §B.7: `min(limit, 500)`; the block reports the effective limit."""
    body = _page(newer, "big", "?limit=100000")
    assert body["pagination"] == {"limit": 500, "offset": 0, "order": "oldest", "returned": 500}
    assert body["data"][0]["content"] == "msg 0"
    assert _page(newer, "big", "?limit=0")["pagination"]["returned"] == 0


@pytest.mark.parametrize("query", ["?limit=-1", "?limit=abc", "?offset=-3", "?offset=1.5", "?limit=", "?offset="])
def test_bad_numbers_are_invalid_pagination(newer: RunningServer, query: str) -> None:
    """V2 §B.7 / §D.2: non-integer or negative → 400 `invalid_pagination`."""
    answer = newer.client.get(f"/api/sessions/small/messages{query}")
    assert answer.status_code == 400
    assert answer.json() == {"error": {"message": "limit and offset must be non-negative integers",
                                       "type": "invalid_request_error", "param": None,
                                       "code": "invalid_pagination"}}


def test_bad_order_is_invalid_pagination_and_checked_first(newer: RunningServer) -> None:
    """V2 §B.7 / §D.2: any other order → 400 (the order is checked before the numbers, api_server.py:3635/3649)."""
    for query in ("?order=newest", "?order=newest&limit=-1"):
        answer = newer.client.get(f"/api/sessions/small/messages{query}")
        assert answer.status_code == 400
        assert answer.json()["error"] == {"message": "order must be one of: oldest, latest",
                                          "type": "invalid_request_error", "param": None,
                                          "code": "invalid_pagination"}


def test_unknown_session_is_404_before_the_parameters(newer: RunningServer) -> None:
    """V2 §B.7: the session is looked up before the parameters are read."""
    answer = newer.client.get("/api/sessions/nope/messages?limit=-1")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "session_not_found"


def test_pages_follow_new_messages(newer: RunningServer) -> None:
    """A remembered page is not served after the transcript changes (store/read_cache.py)."""
    _fill(newer, "grows", 3)
    assert _contents(_page(newer, "grows", "?limit=1&order=latest")) == ["msg 2"]
    conn = connect(newer.db_path)
    try:
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?,?,?,?,1)",
                     ("grows", "user", "msg 3", T0 + 3))
    finally:
        conn.close()
    assert _contents(_page(newer, "grows", "?limit=1&order=latest")) == ["msg 3"]
