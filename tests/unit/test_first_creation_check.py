"""check_existing on what a cut-off write leaves, and the kept key written whole.

The files are made here the way a kill leaves them: a transaction is left open (in
rollback-journal mode with a one-page cache, so its pages are already in the main file)
and the database file and its -journal are copied aside at that moment. The copy is what
SIGKILL would leave (tests/reliability/test_first_start_crash.py does it for real).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from hermes_server.cli import keyfile
from hermes_server.domain.errors import SchemaMismatch
from hermes_server.store.migrate import blank, check_existing, schema_script

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed_state.db"


def cut_off(source: Path, target: Path, script: str) -> None:
    """Copy `source` and its hot journal to `target` as they are midway through `script`."""
    conn = sqlite3.connect(source, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA cache_size=1")
        conn.executescript("BEGIN IMMEDIATE;\n" + script)  # left open: never committed
        journal = source.with_name(source.name + "-journal")
        assert journal.stat().st_size > 0 and source.stat().st_size > 0
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        shutil.copyfile(journal, target.with_name(target.name + "-journal"))
    finally:
        conn.close()


def test_a_first_creation_beside_its_hot_journal_is_fresh_and_rolled_back(tmp_path: Path) -> None:
    target = tmp_path / "home" / "state.db"
    cut_off(tmp_path / "work.db", target, schema_script())
    with closing(sqlite3.connect(f"{target.as_uri()}?immutable=1", uri=True)) as peek:
        with pytest.raises(sqlite3.DatabaseError):  # what the journal-blind read saw
            peek.execute("SELECT count(*) FROM sqlite_master").fetchone()
    assert check_existing(target) == []
    assert target.stat().st_size == 0 and not target.with_name("state.db-journal").exists()


@pytest.mark.parametrize(("committed", "cut_to", "refused"), [(22, 31, False), (31, 22, True)])
def test_a_home_with_a_hot_journal_is_judged_by_its_last_commit(tmp_path: Path, committed: int, cut_to: int,
                                                                refused: bool) -> None:
    work = tmp_path / "work.db"
    shutil.copyfile(SEED, work)
    with closing(sqlite3.connect(work)) as conn:
        conn.execute("UPDATE schema_version SET version = ?", (committed,))
        conn.commit()
    target = tmp_path / "home" / "state.db"
    cut_off(work, target, f"UPDATE schema_version SET version = {cut_to}; DELETE FROM messages; DELETE FROM sessions;")
    if refused:
        with pytest.raises(SchemaMismatch, match=f"is at Hermes schema version {committed};"):
            check_existing(target)
    else:
        assert check_existing(target) == []
    with closing(sqlite3.connect(target)) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (committed,)
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0


def test_the_wal_header_page_alone_is_blank_and_read_untouched(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with closing(sqlite3.connect(db)) as conn:  # what a creation killed right after the WAL switch leaves
        conn.execute("PRAGMA journal_mode=WAL")
    assert db.stat().st_size == 4096
    before = db.read_bytes()
    assert check_existing(db) == []
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["state.db"]


@pytest.mark.parametrize("mark", ["PRAGMA user_version = 7", "PRAGMA application_id = 1234",
                                  "CREATE VIEW v AS SELECT 1"])
def test_a_file_some_program_marked_is_not_blank_and_is_refused(tmp_path: Path, mark: str) -> None:
    db = tmp_path / "state.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(mark)
        conn.commit()
        assert not blank(conn)
    with pytest.raises(SchemaMismatch, match=r"is not a Hermes state\.db"):
        check_existing(db)


def test_the_kept_key_is_linked_whole_and_no_scratch_file_stays(tmp_path: Path) -> None:
    kept = keyfile.stored_key(tmp_path)
    assert kept.generated and kept.not_kept is None
    assert (tmp_path / keyfile.KEY_FILE).read_text() == kept.key + "\n"
    assert os.stat(tmp_path / keyfile.KEY_FILE).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [keyfile.KEY_FILE]
    assert keyfile.stored_key(tmp_path) == keyfile.StoredKey(kept.key, kept.path, generated=False)


def test_without_hard_links_the_key_is_still_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(keyfile.os, "link", no_links)
    kept = keyfile.stored_key(tmp_path)
    assert kept.not_kept is None and (tmp_path / keyfile.KEY_FILE).read_text() == kept.key + "\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [keyfile.KEY_FILE]


def test_a_key_kept_by_a_racing_start_is_the_one_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_link = os.link

    def raced(source: str, target: str) -> None:  # another start links its whole key first
        (tmp_path / "other").write_text("hs-the-other-start-0123456789abcdef\n")
        real_link(tmp_path / "other", target)
        real_link(source, target)

    monkeypatch.setattr(keyfile.os, "link", raced)
    kept = keyfile.stored_key(tmp_path)
    assert kept == keyfile.StoredKey("hs-the-other-start-0123456789abcdef", tmp_path / keyfile.KEY_FILE,
                                     generated=False)
