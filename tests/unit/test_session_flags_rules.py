"""The pure rules of 0.20.4's session flags (domain/session_flags.py) and the profile columns'
preparation (store/migrate.py `Preparer`, store/schema.py) on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes_server.app import Release
from hermes_server.domain.errors import SchemaMismatch
from hermes_server.domain.profiles import HERMES_0_19, HERMES_0_20, HERMES_0_21
from hermes_server.domain.projection import session_projection
from hermes_server.domain.session_flags import NotABoolean, flag_changes, has_more
from hermes_server.store.migrate import Preparer, check_existing, prepare
from hermes_server.store.schema import Reading, missing_columns, shape


def test_flag_changes_take_booleans_only_and_name_the_first_refused() -> None:
    assert flag_changes({"title": "t", "unread": False, "pinned": True}) == {"pinned": True, "unread": False}
    with pytest.raises(NotABoolean, match=r"^'archived' must be a boolean$"):
        flag_changes({"hidden": 1, "archived": "yes"})  # checked in PATCH_FLAGS order: archived first


def test_projected_flags_and_has_more() -> None:
    row = {"id": "s", "title": "x", "archived": 0, "pinned": 1, "hidden": None, "system_prompt": "p"}
    shown = session_projection(row, flags=True)
    # Upstream's order: the allowlisted keys, then pinned/archived/hidden (those the row has), then has_*.
    assert list(shown) == ["id", "title", "pinned", "archived", "hidden", "has_system_prompt", "has_model_config"]
    assert (shown["pinned"], shown["archived"], shown["hidden"]) == (True, False, False)
    assert session_projection({"id": "s", "pinned": 1}, flags=True)["pinned"] is True
    assert "pinned" not in session_projection(row)  # 0.19.0 shows no flags
    rows = [{"pinned": 0}, {"pinned": 1}, {"pinned": 0}]
    assert has_more(rows, 2) is True and has_more(rows, 3) is False


def test_profiles_need_columns_and_readings_as_data() -> None:
    assert Release.of(HERMES_0_19).columns == () and Release.of(HERMES_0_19).reading.plain
    labels = [column.label for column in Release.of(HERMES_0_20).columns]
    assert labels == ["sessions.pinned", "sessions.hidden", "sessions.last_read_at"]
    assert Release.of(HERMES_0_21).columns == Release.of(HERMES_0_20).columns
    assert Release.of(HERMES_0_20).reading == Reading(prompt_store=True, activity_clock=True, flags=True)


def _open(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def test_preparer_adds_columns_to_a_new_file_and_to_an_old_one_only_when_allowed(tmp_path: Path) -> None:
    columns = Release.of(HERMES_0_20).columns
    fresh = tmp_path / "fresh.db"
    conn = _open(fresh)
    Preparer(columns)(conn, fresh)
    assert missing_columns(conn, columns) == [] and shape(conn).flags
    conn.close()

    old = tmp_path / "old.db"
    conn = _open(old)
    prepare(conn, old)  # 0.19.0's: none of them
    assert [c.name for c in missing_columns(conn, columns)] == ["pinned", "hidden", "last_read_at"]
    with pytest.raises(SchemaMismatch, match="wants schema version 22 with them"):
        Preparer(columns, wanted_by="0.20.4")(conn, old)
    with pytest.raises(SchemaMismatch):
        check_existing(old, Preparer(columns))
    conn.close()
    assert [c.name for c in check_existing(old, Preparer(columns, migrate_home=True))] == [
        "pinned", "hidden", "last_read_at"]
    conn = _open(old)
    Preparer(columns, migrate_home=True)(conn, old)
    assert missing_columns(conn, columns) == []
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (22,)
    conn.close()


def test_the_pinned_back_fill_seeks_an_index_instead_of_scanning_the_table(tmp_path: Path) -> None:
    """Every 0.20+ list back-fills the pinned rows; on the flags' partial index that costs the
    pinned rows, not the table (before it, a 10k-session list spent 1.5 ms scanning for them)."""
    from hermes_server.domain.params import ListQuery
    from hermes_server.store import listing
    release = Release.of(HERMES_0_20)
    assert Release.of(HERMES_0_19).indexes == ()
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    Preparer(release.columns, False, "0.20.4", release.indexes)(conn, path)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    listing.reference_page_ids(conn, ListQuery(limit=50), release.reading.on(conn), pinned_only=True)
    conn.set_trace_callback(None)
    plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statements[-1]))
    assert "hs_sessions_pinned" in plan, plan
    assert "SCAN s" not in plan.split(" | "), plan
