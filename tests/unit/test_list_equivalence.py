"""The list's incremental page plan draws exactly the page of the upstream-shaped query.

`fast_page_ids` (bounded work per page) must agree with `reference_page_ids` (the
whole-table recursive CTE shaped like upstream's) on any database: random roots,
compression chains, forks and branches (marker and heuristic), delegates, tool
children, archived rows, tied timestamps and inactive messages, for any
limit/offset/source/include_children; and with 0.20.4's session flags, hidden rows too.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_server.domain.params import ListQuery
from hermes_server.store import db as store_db
from hermes_server.store import listing, migrate
from hermes_server.store.listing import fast_page_ids, reference_page_ids
from hermes_server.store.schema import PLAIN, Reading
from hermes_server.units.session_flags import COLUMNS

pytestmark = pytest.mark.slow

SOURCES = ("api_server", "cli", "tool")
MODEL_CONFIGS = (
    None, None, None, "{}", '{"_branched_from": "x"}', '{"_delegate_from": "x"}',
    '{"_delegate_from": null}', '{"other": 1}',
)
END_REASONS = (None, None, "compression", "compression", "branched", "client_closed")

session_rows = st.lists(
    st.fixed_dictionaries({
        # Usually one of the earlier rows, sometimes a later one (so parent links may form cycles).
        "parent": st.one_of(st.none(), st.integers(0, 1000), st.tuples(st.just("any"), st.integers(0, 1000))),
        "source": st.sampled_from(SOURCES),
        "started_at": st.integers(0, 3),  # few values: plenty of ties
        "end_reason": st.sampled_from(END_REASONS),
        "ended_at": st.integers(0, 3),
        "model_config": st.sampled_from(MODEL_CONFIGS),
        "archived": st.sampled_from((0, 0, 0, 1)),
        "messages": st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=3),
    }),
    min_size=2,
    max_size=20,
)
queries = st.builds(
    ListQuery,
    limit=st.one_of(st.integers(1, 4), st.integers(0, 30)),
    offset=st.one_of(st.just(0), st.integers(0, 12)),
    source=st.sampled_from((None, "api_server", "cli", "tool", "absent")),
    include_children=st.booleans(),
)


FLAGS = Reading(flags=True)


def fresh_db(path: Path, reading: Reading = PLAIN) -> sqlite3.Connection:
    """A v22 state.db made by our own migrations (with the hs_* indexes the fast path uses); with
    the flags reading, as the 0.20.4 profile makes it (its flag columns added)."""
    conn = store_db.connect(path)
    preparer = migrate.Preparer(COLUMNS) if reading.flags else migrate.prepare
    preparer(conn, path)
    return conn


def fill(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    conn.execute("BEGIN")
    conn.execute("DELETE FROM messages")
    conn.execute("DELETE FROM sessions")
    for index, row in enumerate(rows):
        ended = row["end_reason"] is not None
        conn.execute(
            "INSERT INTO sessions (id, source, started_at, end_reason, ended_at, model_config, archived)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (f"s{index:02d}", row["source"], float(row["started_at"]), row["end_reason"],
             float(row["ended_at"]) if ended else None, row["model_config"], row["archived"]),
        )
        for timestamp, active in row["messages"]:
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'user', 'm', ?, ?)",
                (f"s{index:02d}", float(timestamp), int(active)),
            )
    for index, row in enumerate(rows):  # links after all rows exist (the foreign key allows any order then)
        parent = row["parent"]
        if isinstance(parent, tuple):
            target = parent[1] % len(rows)
        elif parent is not None and index:
            target = parent % index
        else:
            continue
        if target != index:
            conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (f"s{target:02d}", f"s{index:02d}"))
    conn.execute("COMMIT")


def assert_same_pages(conn: sqlite3.Connection, rows: list[dict[str, Any]], query: ListQuery,
                      reading: Reading = PLAIN) -> None:
    # The drawn query, then a sweep of the others on the same data (cheap on a small table).
    sweep = [ListQuery(limit, offset, source, children)
             for limit, offset in ((200, 0), (1, 0), (2, 1), (3, 4))
             for source in (None, "api_server", "cli", "tool")
             for children in (False, True)]
    for q in [query, *sweep]:
        fast = fast_page_ids(conn, q, reading=reading)
        assert fast is None or fast == reference_page_ids(conn, q, reading), (q, json.dumps(rows))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=session_rows, query=queries)
def test_fast_page_equals_reference_page(tmp_path: Path, rows: list[dict[str, Any]], query: ListQuery) -> None:
    conn = _connection(tmp_path)
    fill(conn, rows)
    assert_same_pages(conn, rows, query)
    assert fast_page_ids(conn, ListQuery(limit=200)) is not None  # small tables never need the fallback


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=session_rows, query=queries)
def test_tiny_windows_page_equals_reference_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 rows: list[dict[str, Any]], query: ListQuery) -> None:
    """Windows of a row or two: every page needs the window growth and cuts at tied values."""
    monkeypatch.setattr(listing, "MIN_WINDOW", 1)
    monkeypatch.setattr(listing, "MESSAGES_PER_ROW", 1)
    monkeypatch.setattr(listing, "SESSIONS_PER_ROW", 1)
    conn = _connection(tmp_path)
    fill(conn, rows)
    assert_same_pages(conn, rows, query)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=session_rows, query=queries, hidden=st.sets(st.integers(0, 19)))
def test_fast_page_equals_reference_page_with_hidden_rows(tmp_path: Path, rows: list[dict[str, Any]],
                                                          query: ListQuery, hidden: set[int]) -> None:
    """0.20.4 leaves hidden rows out: both plans agree, and no hidden row is ever on a page."""
    conn = _connection(tmp_path, FLAGS)
    fill(conn, rows)
    with conn:
        conn.executemany("UPDATE sessions SET hidden = 1 WHERE id = ?", [(f"s{i:02d}",) for i in hidden])
    assert_same_pages(conn, rows, query, FLAGS)
    page = reference_page_ids(conn, ListQuery(limit=200, include_children=True), FLAGS)
    assert not {f"s{i:02d}" for i in hidden} & set(page)


def test_budget_exhaustion_gives_none(tmp_path: Path) -> None:
    """When the incremental plan would cost too much it says so, and the caller uses the reference."""
    conn = _connection(tmp_path)
    fill(conn, [{"parent": None, "source": "api_server", "started_at": i, "end_reason": None, "ended_at": 0,
                 "model_config": None, "archived": 0, "messages": []} for i in range(10)])
    assert fast_page_ids(conn, ListQuery(limit=5, offset=3), budget=3) is None
    assert fast_page_ids(conn, ListQuery(limit=5, offset=3)) == reference_page_ids(conn, ListQuery(limit=5, offset=3))


_CONNECTIONS: dict[Path, sqlite3.Connection] = {}


def _connection(tmp_path: Path, reading: Reading = PLAIN) -> sqlite3.Connection:
    """One database per test function, reused across hypothesis examples (refilled each time)."""
    if tmp_path not in _CONNECTIONS:
        _CONNECTIONS[tmp_path] = fresh_db(tmp_path / "state.db", reading)
    return _CONNECTIONS[tmp_path]
