"""state.db's journal mode per release (store/journal.py): 0.19.0 always WAL; 0.20's
`database.journal_mode` (https://github.com/NousResearch/hermes-agent/pull/74485); 0.21's ERROR and
WARNING (https://github.com/NousResearch/hermes-agent/pull/96439)."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from hermes_server.store import journal
from hermes_server.store.journal import ALWAYS_WAL, Journal, configured_mode, set_mode

V020 = Journal.CONFIGURED
V021 = Journal.CONFIGURED | Journal.TOLD


@pytest.fixture(autouse=True)
def _fresh_log_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal, "_told", set())


def _home(tmp_path: Path, config: str | None) -> Path:
    if config is not None:
        (tmp_path / "config.yaml").write_text(config, encoding="utf-8")
    return tmp_path / "state.db"


def _file(path: Path, mode: str) -> None:
    """A state.db holding a table, in journal mode `mode`."""
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA journal_mode={mode}")
        conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
    conn.close()


def _open(path: Path, flags: Journal, *, fresh: bool = False) -> str:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        set_mode(conn, path, flags, fresh=fresh)
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize(("config", "mode"), [
    (None, "wal"), ("database:\n  journal_mode: delete\n", "delete"), ("database:\n  journal_mode: ' DELETE '\n", "delete"),
    ("database:\n  journal_mode: wal\n", "wal"), ("database:\n  journal_mode: truncate\n", "wal"),
    ("database:\n  journal_mode: 3\n", "wal"), ("database: delete\n", "wal"), ("database: [", "wal"), ("[]\n", "wal"),
])
def test_the_configured_mode_is_read_as_upstream_reads_it(tmp_path: Path, config: str | None, mode: str) -> None:
    _home(tmp_path, config)
    assert configured_mode(tmp_path) == mode


def test_0_19_0_switches_every_file_to_wal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _home(tmp_path, "database:\n  journal_mode: delete\n")
    _file(path, "delete")
    assert _open(path, ALWAYS_WAL) == "wal"
    assert not caplog.records


def test_0_20_creates_and_keeps_a_configured_delete_file(tmp_path: Path) -> None:
    path = _home(tmp_path, "database:\n  journal_mode: delete\n")
    assert _open(path, V020, fresh=True) == "delete"
    _file(path, "delete")
    assert _open(path, V020) == "delete"
    _file(path, "truncate")
    assert _open(path, V020) == "delete"
    assert not (tmp_path / "state.db-wal").exists()


def test_0_20_never_switches_a_wal_file_back(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _home(tmp_path, "database:\n  journal_mode: delete\n")
    _file(path, "wal")
    assert _open(path, V020) == "wal"
    assert not caplog.records  # 0.20 says nothing of it


def test_0_20_switches_a_delete_file_to_wal_by_default(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _home(tmp_path, None)
    _file(path, "delete")
    assert _open(path, V020) == "wal"
    assert not caplog.records


def test_0_21_says_once_that_a_configured_delete_found_wal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _home(tmp_path, "database:\n  journal_mode: delete\n")
    _file(path, "wal")
    with caplog.at_level(logging.WARNING):
        assert _open(path, V021) == "wal"
        assert _open(path, V021) == "wal"
    assert [record.levelno for record in caplog.records] == [logging.ERROR]
    assert "database.journal_mode=delete is configured but the database is already in WAL mode" in caplog.text


def test_0_21_warns_once_when_a_file_is_switched_to_wal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _home(tmp_path, None)
    _file(path, "delete")
    with caplog.at_level(logging.WARNING):
        assert _open(path, V021) == "wal"
        _file(path, "delete")
        assert _open(path, V021) == "wal"
    assert [record.levelno for record in caplog.records] == [logging.WARNING]
    assert "the journal mode was delete and has been switched to WAL" in caplog.text
    assert "`database.journal_mode: delete`" in caplog.text


def test_0_21_says_nothing_of_a_new_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _home(tmp_path, None)
    with caplog.at_level(logging.WARNING):
        assert _open(path, V021, fresh=True) == "wal"
    assert not caplog.records
