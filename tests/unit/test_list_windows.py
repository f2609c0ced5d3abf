"""The list's windowed reads grow until the page is exact: same page as the reference plan.

test_list_equivalence checks the plan with its production window sizes, where the
small generated databases always fit in the first window. Here the windows start at
one entry, so every page is drawn through several rounds of growth, with ties cut
at window edges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from hermes_server.domain.params import ListQuery
from hermes_server.store import listing
from tests.unit.test_list_equivalence import _connection, fill, queries, session_rows


@pytest.fixture
def tiny_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "MESSAGES_PER_ROW", 0)
    monkeypatch.setattr(listing, "SESSIONS_PER_ROW", 0)
    monkeypatch.setattr(listing, "MIN_WINDOW", 1)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=session_rows, query=queries)
def test_growing_windows_give_the_reference_page(tmp_path: Path, tiny_windows: None,
                                                 rows: list[dict[str, Any]], query: ListQuery) -> None:
    conn = _connection(tmp_path)
    fill(conn, rows)
    assert listing.fast_page_ids(conn, query) == listing.reference_page_ids(conn, query), json.dumps(rows)


def test_list_rows_keeps_the_requested_order(tmp_path: Path) -> None:
    conn = _connection(tmp_path)
    fill(conn, [{"parent": None, "source": "api_server", "started_at": i, "end_reason": None, "ended_at": 0,
                 "model_config": None, "archived": 0, "messages": [(i, True)]} for i in range(4)])
    assert [row["id"] for row in listing.list_rows(conn, ["s02", "missing", "s00", "s03"])] == ["s02", "s00", "s03"]
