"""state.db's journal mode on real server processes, per release: 0.19.0 switches a home to WAL;
0.20+ keeps one in DELETE mode when config.yaml says `database.journal_mode: delete`
(https://github.com/NousResearch/hermes-agent/pull/74485), and 0.21+ logs a WARNING when it switches
a file to WAL (https://github.com/NousResearch/hermes-agent/pull/96439). Unit cases:
tests/unit/test_journal_mode.py."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.support.server import start_server

pytestmark = pytest.mark.slow

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed_state.db"
DELETE = "database:\n  journal_mode: delete\n"
SWITCHED = "has been switched to WAL"


def _home(tmp_path: Path, config: str | None, *, seeded: bool = True) -> Path:
    """A home whose state.db (the seed, when `seeded`) is in DELETE mode."""
    home = tmp_path / "home"
    home.mkdir()
    if seeded:
        shutil.copyfile(SEED, home / "state.db")
        with sqlite3.connect(home / "state.db") as conn:
            conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()
    if config is not None:
        (home / "config.yaml").write_text(config, encoding="utf-8")
    return home


def _mode(home: Path) -> str:
    with sqlite3.connect(home / "state.db") as conn:
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    conn.close()
    return mode


def _serve_and_use(home: Path, version: str) -> tuple[bool, str]:
    """Start, write and read, stop; whether a WAL file existed while it served, and the log."""
    migrate = ("--migrate-home",) if version != "0.19.0" else ()  # the seed is a 0.19.0 home
    server = start_server(home, "--hermes-version", version, *migrate, in_process=False)
    try:
        for n in range(5):
            assert server.client.post("/api/sessions", json={"id": f"j{n}"}).status_code == 201
            answer = server.client.post(f"/api/sessions/j{n}/chat", json={"message": "hello"})
            assert answer.status_code == 200, answer.text
        assert len(server.client.get("/api/sessions").json()["data"]) >= 5
        assert len(server.client.get("/api/sessions/j4/messages").json()["data"]) == 2
        wal = (home / "state.db-wal").exists()
    finally:
        assert server.stop() == 0
    return wal, server.log()


@pytest.mark.parametrize("version", ["0.20.4", "0.21.6"])
def test_a_configured_delete_home_stays_in_delete_mode(tmp_path: Path, version: str) -> None:
    home = _home(tmp_path, DELETE)
    wal, log = _serve_and_use(home, version)
    assert not wal and _mode(home) == "delete"
    trouble = [line for line in log.splitlines()
               if (" WARNING " in line or " ERROR " in line or "Traceback" in line) and "--migrate-home" not in line]
    assert trouble == []


def test_a_new_home_configured_delete_is_created_in_delete_mode(tmp_path: Path) -> None:
    home = _home(tmp_path, DELETE, seeded=False)
    wal, _log = _serve_and_use(home, "0.21.6")
    assert not wal and _mode(home) == "delete"


def test_0_21_6_switches_an_unconfigured_delete_home_to_wal_and_says_so(tmp_path: Path) -> None:
    home = _home(tmp_path, None)
    wal, log = _serve_and_use(home, "0.21.6")
    assert wal and _mode(home) == "wal"
    assert log.count(SWITCHED) == 1 and "WARNING" in log


def test_0_19_0_switches_even_a_configured_delete_home_to_wal_silently(tmp_path: Path) -> None:
    home = _home(tmp_path, DELETE)
    wal, log = _serve_and_use(home, "0.19.0")
    assert wal and _mode(home) == "wal"
    assert SWITCHED not in log
