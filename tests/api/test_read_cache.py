"""Remembered read answers (list, session, messages) never outlive a change to state.db.

The answers of the three session reads are kept until state.db changes. These tests
read twice (the second answer comes from memory), then change the file from another
process, as real Hermes or a CLI would, or through the API, and read again at once:
the change must be there. A cache that trusted itself instead of SQLite's change
counter fails every one of them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.db import database_opened, insert_message, insert_session  # noqa: F401
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process

T0 = 1_700_000_000.0


def other_process(db_path: Path, statement: str, *params: object) -> None:
    """Run one statement from a separate Python process (its own SQLite connection and file lock)."""
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            "c.execute(sys.argv[2], sys.argv[3:]); c.close()")
    subprocess.run([sys.executable, "-c", code, str(db_path), statement, *map(str, params)], check=True, timeout=30)


def twice(server: RunningServer, path: str) -> httpx.Response:
    """Read twice; the answers (status, headers but Date, body) must be the same bytes."""
    first, second = server.client.get(path), server.client.get(path)
    assert first.status_code == second.status_code == 200, first.text
    assert first.content == second.content
    strip = lambda r: [(k, v) for k, v in r.headers.raw if k.lower() != b"date"]  # noqa: E731
    assert strip(first) == strip(second)
    return second


def test_another_process_changing_a_title_shows_at_once(server: RunningServer) -> None:
    insert_session(server.db_path, "rc-title", started_at=T0, title="before")
    assert twice(server, "/api/sessions/rc-title").json()["session"]["title"] == "before"
    listed = twice(server, "/api/sessions?limit=200").json()["data"]
    assert {"rc-title": "before"}.items() <= {row["id"]: row["title"] for row in listed}.items()
    other_process(server.db_path, "UPDATE sessions SET title = ? WHERE id = ?", "after", "rc-title")
    assert server.client.get("/api/sessions/rc-title").json()["session"]["title"] == "after"
    listed = server.client.get("/api/sessions?limit=200").json()["data"]
    assert {row["id"]: row["title"] for row in listed}["rc-title"] == "after"


def test_another_process_adding_a_message_shows_at_once(server: RunningServer) -> None:
    insert_session(server.db_path, "rc-msg", started_at=T0)
    insert_message(server.db_path, "rc-msg", "user", "one", T0 + 1)
    assert [m["content"] for m in twice(server, "/api/sessions/rc-msg/messages").json()["data"]] == ["one"]
    other_process(server.db_path, "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                  "rc-msg", "assistant", "two", T0 + 2)
    assert [m["content"] for m in server.client.get("/api/sessions/rc-msg/messages").json()["data"]] == ["one", "two"]


def test_a_session_deleted_elsewhere_is_gone_at_once(server: RunningServer) -> None:
    insert_session(server.db_path, "rc-gone", started_at=T0)
    twice(server, "/api/sessions/rc-gone")
    twice(server, "/api/sessions/rc-gone/messages")
    other_process(server.db_path, "DELETE FROM sessions WHERE id = ?", "rc-gone")
    assert server.client.get("/api/sessions/rc-gone").status_code == 404
    assert server.client.get("/api/sessions/rc-gone/messages").status_code == 404


def test_writes_through_the_api_show_in_the_next_read(server: RunningServer) -> None:
    assert server.client.post("/api/sessions", json={"id": "rc-api"}).status_code == 201
    twice(server, "/api/sessions/rc-api")
    listed = twice(server, "/api/sessions?limit=5").content
    assert server.client.patch("/api/sessions/rc-api", json={"title": "renamed"}).status_code == 200
    assert server.client.get("/api/sessions/rc-api").json()["session"]["title"] == "renamed"
    assert server.client.get("/api/sessions?limit=5").content != listed
    chat = server.client.post("/api/sessions/rc-api/chat", json={"message": "hello"})
    assert chat.status_code == 200, chat.text
    roles = [m["role"] for m in server.client.get("/api/sessions/rc-api/messages").json()["data"]]
    assert roles == ["user", "assistant"]


def test_a_missing_session_is_not_remembered(server: RunningServer) -> None:
    assert server.client.get("/api/sessions/rc-later").status_code == 404
    assert server.client.get("/api/sessions/rc-later/messages").status_code == 404
    insert_session(server.db_path, "rc-later", started_at=T0)
    assert server.client.get("/api/sessions/rc-later").status_code == 200
    assert server.client.get("/api/sessions/rc-later/messages").status_code == 200


@pytest.mark.parametrize("budget", ["0", "1"])
def test_no_cache_and_a_tiny_one_answer_the_same_bytes(tmp_path: Path, server: RunningServer, budget: str) -> None:
    """`--read-cache-mb 0` builds every answer; 1 MB keeps a few: same bytes as the default server."""
    sid = f"rc-same-{budget}"
    insert_session(server.db_path, sid, started_at=T0, title=f"same {budget}")
    insert_message(server.db_path, sid, "user", "héllo", T0 + 1)
    paths = [f"/api/sessions/{sid}", f"/api/sessions/{sid}/messages", "/api/sessions?limit=3"]
    expected = [server.client.get(p).content for p in paths]
    home = tmp_path / "copy"
    home.mkdir()
    other_process(server.db_path, "VACUUM INTO ?", home / "state.db")
    other = start_server(home, "--read-cache-mb", budget)
    try:
        assert [other.client.get(p).content for p in paths] == expected
        assert [other.client.get(p).content for p in paths] == expected
    finally:
        other.stop()
