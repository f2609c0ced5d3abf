"""Fixture rough edges: README's seed-then-serve sequence, every problem at once, a guarded `seed --replace`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import clean_env, free_port, start_server

pytestmark = pytest.mark.slow


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_server", *args], capture_output=True, text=True,
                          timeout=60, env=clean_env())


def write(path: Path, document: dict) -> Path:
    path.write_text(json.dumps(document))
    return path


def sessions(home: Path) -> dict[str, str]:
    with sqlite3.connect(home / "state.db") as conn:
        return dict(conn.execute("SELECT id, source FROM sessions"))


FIXTURE = {"sessions": [{"id": "case-1", "title": "One", "messages": [{"role": "user", "content": "hi"}]},
                        {"id": "case-2"}]}


def test_readme_sequence_seed_then_serve_with_the_same_fixture(tmp_path: Path) -> None:
    home, fixture = tmp_path / "h", write(tmp_path / "fixture.json", FIXTURE)
    assert cli("seed", str(fixture), "--home", str(home)).returncode == 0
    for _ in range(2):  # and a restart on the same home
        server = start_server(home, "--fixture", str(fixture), "--fixture-api")
        try:
            assert "is in state.db already (all 2 of its sessions); not loaded again" in server.log()
            assert sorted(s["id"] for s in server.client.get("/api/sessions").json()["data"]) == ["case-1", "case-2"]
        finally:
            server.stop()


def test_a_partial_clash_at_start_says_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert cli("seed", str(write(tmp_path / "one.json", {"sessions": [{"id": "case-1"}]})), "--home", str(home)).returncode == 0
    out = cli("serve", "--home", str(home), "--fixture", str(write(tmp_path / "f.json", FIXTURE)), "--port", str(free_port()),
              "--no-auth")
    assert out.returncode == 2
    assert "session 'case-1' already exists in state.db" in out.stderr
    assert "start on a fresh --home" in out.stderr and "seed FILE --replace" in out.stderr


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert cli("seed", str(write(tmp_path / "a.json", {"sessions": [{"id": "taken"}]})), "--home", str(home)).returncode == 0
    bad = write(tmp_path / "bad.json", {"sessions": [
        {"id": "taken"},                           # already in state.db
        {"id": "twice"}, {"id": "twice"},          # duplicate in the file
        {"id": "typed", "message_count": "many"},  # a wrong type
        {"id": "orphan", "parent": "nowhere"},     # a parent neither here nor there
    ]})
    for out in (cli("seed", str(bad), "--home", str(home)),
                cli("serve", "--home", str(home), "--fixture", str(bad), "--no-auth", "--port", str(free_port()))):
        assert out.returncode in (1, 2)
        text = out.stderr
        assert "already exists in state.db" in text and "duplicate id 'twice'" in text
        assert "$.sessions[3].message_count" in text and "unknown parent 'nowhere'" in text
    assert sessions(home) == {"taken": "api_server"}


def test_seed_replace_refuses_a_home_with_sessions_hermes_server_did_not_write(tmp_path: Path) -> None:
    home = tmp_path / "h"
    real = write(tmp_path / "real.json", {"sessions": [{"id": f"cli-{i}", "source": "cli"} for i in range(3)]
                                          + [{"id": "tg", "source": "telegram"}, {"id": "api"}]})
    assert cli("seed", str(real), "--home", str(home)).returncode == 0
    mine = write(tmp_path / "mine.json", FIXTURE)
    out = cli("seed", str(mine), "--home", str(home), "--replace")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "holds 4 sessions hermes-server did not write (source cli: 3, telegram: 1)" in out.stderr
    assert "delete all 5 sessions and 0 messages" in out.stderr and "--force" in out.stderr
    assert len(sessions(home)) == 5  # nothing touched
    # Re-seeding the same fixture brings its own sessions back: nothing foreign would go.
    assert cli("seed", str(real), "--home", str(home), "--replace").returncode == 0
    forced = cli("seed", str(mine), "--home", str(home), "--replace", "--force")
    assert forced.returncode == 0, forced.stderr
    assert sessions(home) == {"case-1": "api_server", "case-2": "api_server"}
    # Only api_server sessions left: a replace needs no --force.
    assert cli("seed", str(mine), "--home", str(home), "--replace").returncode == 0
