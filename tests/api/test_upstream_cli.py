"""Real Hermes's own `hermes` CLI (hermes-agent 0.19.0) on a home that hermes-server wrote.

A user who points `hermes sessions list`/`export` at the server's HERMES_HOME sees the same
sessions, titles, previews and transcripts as the API serves, and what the CLI changes
(`rename`, `delete`) the API serves next. The venv comes from tests/upstream.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.server import RunningServer, clean_env, start_server
from tests.support.upstream import upstream_bin

pytestmark = pytest.mark.interop

SEEDED = {"sessions": [
    {"id": "chain", "source": "cli", "title": "Chain", "end_reason": "compression", "started_at": 1_800_000_000,
     "messages": [{"role": "user", "content": "long ago"}]},
    {"id": "chain-2", "parent": "chain", "relation": "compression", "started_at": 1_800_000_100,
     "messages": [{"role": "assistant", "content": "summary"}, {"role": "user", "content": "latest words"}]},
    {"id": "helper", "parent": "chain", "relation": "delegate", "source": "tool", "started_at": 1_800_000_050},
    {"id": "hidden", "title": "Archived", "archived": True, "started_at": 1_800_000_200},
]}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server whose state.db holds what the API writes (create, chat, fork) and what only a
    fixture can (a compression chain, a delegate child, an archived row)."""
    server = start_server(tmp_path_factory.mktemp("cli") / "home", "--fixture-api")
    c = server.client
    assert c.post("/_fixture/seed", json=SEEDED).status_code == 200
    assert c.post("/api/sessions", json={"id": "alpha", "title": "Alpha"}).status_code == 201
    assert c.post("/api/sessions/alpha/chat", json={"message": "hello there"}).status_code == 200
    assert c.post("/api/sessions", json={"id": "beta", "system_prompt": "Be brief."}).status_code == 201
    assert c.post("/api/sessions/alpha/fork", json={"id": "alpha-fork", "title": "Alpha fork"}).status_code == 201
    yield server
    server.stop()


def hermes(server: RunningServer, *args: str) -> str:
    """Run `hermes ARGS` on the server's home, with a home directory of its own (never ~/.hermes)."""
    home = server.home.parent / "user-home"
    home.mkdir(exist_ok=True)
    env = clean_env(HERMES_HOME=str(server.home), HOME=str(home), NO_COLOR="1", COLUMNS="200")
    out = subprocess.run([str(upstream_bin("hermes")), *args], capture_output=True, text=True, timeout=120,
                         env=env, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def table(text: str) -> list[dict[str, str]]:
    """`hermes sessions list`'s rows: title (None for "—"), preview, id (the last column)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Title")) + 2  # header, rule
    rows = []
    for line in lines[start:]:
        if not line.strip():
            continue
        title, preview = line[:33].strip(), line[33:74].strip()
        rows.append({"title": None if title == "—" else title, "preview": preview, "id": line.split()[-1]})
    return rows


def api_list(server: RunningServer) -> list[dict[str, Any]]:
    return server.client.get("/api/sessions", params={"limit": 100}).json()["data"]


def test_sessions_list_shows_what_the_api_lists(written: RunningServer) -> None:
    listed = table(hermes(written, "sessions", "list", "--limit", "100"))
    # The API orders by last activity (as 0.19.0's does), the CLI by start time.
    ours = sorted(api_list(written), key=lambda row: row["started_at"], reverse=True)
    assert [row["id"] for row in listed] == [row["id"] for row in ours]
    assert {row["id"] for row in listed} == {"chain-2", "alpha", "alpha-fork", "beta"}  # tip shown; hidden ones not
    for cli_row, api_row in zip(listed, ours, strict=True):
        assert cli_row["title"] == (api_row["title"][:32] if api_row["title"] else None)
        assert api_row["preview"].startswith(cli_row["preview"].rstrip("…."))


def test_sessions_export_has_every_row_and_transcript(written: RunningServer) -> None:
    exported = {row["id"]: row for row in map(json.loads, hermes(written, "sessions", "export", "-").splitlines())}
    with sqlite3.connect(written.db_path) as conn:
        stored = {row[0] for row in conn.execute("SELECT id FROM sessions")}
    assert set(exported) == stored == {"chain", "chain-2", "helper", "hidden", "alpha", "beta", "alpha-fork"}
    for session_id in ("alpha", "alpha-fork", "beta", "chain-2"):
        ours = written.client.get(f"/api/sessions/{session_id}").json()["session"]
        theirs = exported[session_id]
        for column in ("title", "source", "model", "parent_session_id", "message_count", "input_tokens",
                       "output_tokens", "started_at"):
            assert theirs[column] == ours[column], (session_id, column)
        messages = written.client.get(f"/api/sessions/{session_id}/messages").json()["data"]
        assert [(m["role"], m["content"]) for m in theirs["messages"]] == [(m["role"], m["content"]) for m in messages]
    assert [m["content"] for m in exported["alpha"]["messages"]] == ["hello there", "ECHO-REPLY to: hello there [n=1]"]
    assert exported["beta"]["system_prompt"] == "Be brief."
    assert exported["hidden"]["archived"] == 1 and exported["chain-2"]["parent_session_id"] == "chain"


def test_what_the_cli_changes_the_api_serves(written: RunningServer) -> None:
    hermes(written, "sessions", "rename", "beta", "Renamed", "by", "hermes")
    assert written.client.get("/api/sessions/beta").json()["session"]["title"] == "Renamed by hermes"
    hermes(written, "sessions", "delete", "--yes", "alpha-fork")
    assert written.client.get("/api/sessions/alpha-fork").status_code == 404
    assert "alpha-fork" not in {row["id"] for row in api_list(written)}
    # ...and the CLI sees what the API does next.
    assert written.client.post("/api/sessions", json={"id": "after-cli", "title": "After"}).status_code == 201
    assert "after-cli" in {row["id"] for row in table(hermes(written, "sessions", "list", "--limit", "100"))}


def test_the_cli_is_the_pinned_release() -> None:
    out = subprocess.run([str(upstream_bin("python")), "-c",
                          "import importlib.metadata as m; print(m.version('hermes-agent'))"],
                         capture_output=True, text=True, timeout=60, env=clean_env())
    assert out.stdout.strip() == "0.19.0", out.stderr
