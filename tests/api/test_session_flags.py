"""Session flags of the 0.20.4 profile and up, each naming its source in
/work/shared/spec/hermes-after-0.19.md §1.4 ("Session object", "PATCH /api/sessions/{id} (changed,
in 0.20.4)", "GET /api/sessions (changed)"), graded [R] by the V2 audit of the 0.20.4 tree
(§B.1/§B.2/§B.5), with `hidden` [M] by #86797 and the lineage-wide setters and the read watermark
from upstream's `hermes_state` (`set_session_pinned|archived|hidden|read`). 0.19.0 stays as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process

NEWER = ("0.20.4", "0.21.2")
KEYS_0_19 = [
    "id", "source", "user_id", "model", "title", "started_at", "ended_at", "end_reason", "message_count",
    "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd", "api_call_count", "parent_session_id",
]


@pytest.fixture(scope="module", params=NEWER)
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("flags") / "hermes", "--hermes-version", request.param)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("flags-old") / "hermes")
    yield srv
    srv.stop()


def create(srv: RunningServer, session_id: str, **body: Any) -> dict[str, Any]:
    response = srv.client.post("/api/sessions", json={"id": session_id, **body})
    assert response.status_code == 201, response.text
    return response.json()["session"]


def patch(srv: RunningServer, session_id: str, body: dict[str, Any]) -> Any:
    return srv.client.patch(f"/api/sessions/{session_id}", json=body)


def db(srv: RunningServer) -> sqlite3.Connection:
    return sqlite3.connect(srv.db_path)


def stored(srv: RunningServer, session_id: str, column: str) -> Any:
    with db(srv) as conn:
        return conn.execute(f"SELECT {column} FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]


def listed(srv: RunningServer, query: str = "") -> dict[str, Any]:
    response = srv.client.get(f"/api/sessions{query}")
    assert response.status_code == 200, response.text
    return response.json()


def test_the_session_object_has_the_flags_as_booleans_in_upstreams_place(newer: RunningServer) -> None:
    """§1.4 "Session object" [R V2 §B.2]: `pinned, archived, hidden` follow `_lineage_root_id`'s place
    (the allowlist's end), before the two `has_*` keys; real booleans, coerced from 0/1."""
    session = create(newer, "flag-shape", title="shape")
    keys = list(session)
    assert keys == [*KEYS_0_19, "pinned", "archived", "hidden", "has_system_prompt", "has_model_config"]
    assert [session[k] for k in ("pinned", "archived", "hidden")] == [False, False, False]
    with db(newer) as conn:  # a 2 someone else stored still reads true, not 2
        conn.execute("UPDATE sessions SET pinned = 2 WHERE id = 'flag-shape'")
    got = newer.client.get("/api/sessions/flag-shape").json()["session"]
    assert got["pinned"] is True and got["hidden"] is False
    row = next(r for r in listed(newer)["data"] if r["id"] == "flag-shape")
    assert list(row)[-5:] == keys[-5:] and row["pinned"] is True


def test_patch_sets_each_flag_and_answers_the_refreshed_session(newer: RunningServer) -> None:
    """§1.4 PATCH [R V2 §B.5; V6 `test_patch_session_persists_pinned_and_archived`]."""
    create(newer, "flag-patch")
    response = patch(newer, "flag-patch", {"pinned": True, "archived": True, "hidden": True})
    assert response.status_code == 200, response.text
    session = response.json()["session"]
    assert (session["pinned"], session["archived"], session["hidden"]) == (True, True, True)
    assert [stored(newer, "flag-patch", c) for c in ("pinned", "archived", "hidden")] == [1, 1, 1]
    session = patch(newer, "flag-patch", {"pinned": False, "hidden": False}).json()["session"]
    assert (session["pinned"], session["archived"], session["hidden"]) == (False, True, False)


@pytest.mark.parametrize(("number", "value"), list(enumerate([1, 0, "true", None, [], {}])))
@pytest.mark.parametrize("field", ["pinned", "archived", "hidden", "unread"])
def test_a_flag_that_is_not_a_boolean_is_400_and_nothing_is_written(newer: RunningServer, field: str,
                                                                    number: int, value: Any) -> None:
    """§1.4 PATCH errors [R V2 §B.5; V6 `…rejects_non_boolean_pinned`]: 400 `invalid_session_field`,
    "'pinned' must be a boolean"; the title sent with it is not stored either (docs/differences.md)."""
    sid = f"flag-bad-{field}-{number}"
    create(newer, sid)
    response = patch(newer, sid, {"title": "not stored", field: value})
    assert response.status_code == 400
    assert response.json() == {"error": {"message": f"'{field}' must be a boolean", "type": "invalid_request_error",
                                          "param": None, "code": "invalid_session_field"}}
    assert stored(newer, sid, "title") is None


def test_unknown_fields_are_still_unsupported(newer: RunningServer) -> None:
    """§1.4 PATCH: an unknown key → 400 `unsupported_session_field` (unchanged), before the flag check."""
    create(newer, "flag-unknown")
    response = patch(newer, "flag-unknown", {"pinned": "x", "model": "m"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unsupported_session_field"
    assert response.json()["error"]["message"] == "Unsupported session fields: model"


def test_unread_moves_the_read_watermark(newer: RunningServer) -> None:
    """§1.4 PATCH: `unread` → `set_session_read(read = not unread)`: `last_read_at` 0 for unread, the
    time of the PATCH for read (upstream's watermark; NULL, never tracked, until then)."""
    create(newer, "flag-read")
    assert stored(newer, "flag-read", "last_read_at") is None
    assert patch(newer, "flag-read", {"unread": True}).status_code == 200
    assert stored(newer, "flag-read", "last_read_at") == 0.0
    started = stored(newer, "flag-read", "started_at")
    assert patch(newer, "flag-read", {"unread": False}).status_code == 200
    assert stored(newer, "flag-read", "last_read_at") >= started
    assert "unread" not in newer.client.get("/api/sessions/flag-read").json()["session"]


def test_a_flag_covers_the_whole_compression_lineage(newer: RunningServer) -> None:
    """Upstream's `set_session_pinned` (`_set_lineage_column`): the row, its compression ancestors and
    every row below it through compression-ended parents get the flag at once."""
    for sid in ("lin-root", "lin-tip", "lin-fork"):
        create(newer, sid)
    with db(newer) as conn:
        conn.execute("UPDATE sessions SET end_reason = 'compression', ended_at = started_at WHERE id = 'lin-root'")
        conn.execute("UPDATE sessions SET parent_session_id = 'lin-root' WHERE id IN ('lin-tip', 'lin-fork')")
        conn.execute("UPDATE sessions SET model_config = '{\"_branched_from\": \"lin-root\"}' WHERE id = 'lin-fork'")
    assert patch(newer, "lin-root", {"pinned": True}).status_code == 200
    # Every child of the compression-ended root is reached, the fork as well (as upstream's SQL does).
    assert [stored(newer, s, "pinned") for s in ("lin-root", "lin-tip", "lin-fork")] == [1, 1, 1]
    assert patch(newer, "lin-tip", {"pinned": False}).status_code == 200
    # From the tip: itself and its ancestors; its sibling is no ancestor.
    assert [stored(newer, s, "pinned") for s in ("lin-root", "lin-tip", "lin-fork")] == [0, 0, 1]


def test_the_list_leaves_hidden_rows_out(newer: RunningServer) -> None:
    """§1.4 GET /api/sessions [R V2 §B.1]: `hidden=1` rows are excluded (archived ones already were)."""
    create(newer, "list-hidden")
    create(newer, "list-shown")
    patch(newer, "list-hidden", {"hidden": True})
    ids = [row["id"] for row in listed(newer, "?limit=200")["data"]]
    assert "list-shown" in ids and "list-hidden" not in ids
    assert newer.client.get("/api/sessions/list-hidden").json()["session"]["hidden"] is True


def test_pinned_rows_are_back_filled_past_the_limit_and_has_more_ignores_them(tmp_path: Any) -> None:
    """§1.4 GET /api/sessions [R V2 §B.1]: `include_pinned=True` back-fills pinned rows past the limit;
    `has_more` counts only non-pinned rows against `limit`."""
    srv = start_server(tmp_path / "hermes", "--hermes-version", "0.20.4")
    try:
        for n in range(6):
            create(srv, f"p{n}")  # p5 is the newest
        patch(srv, "p0", {"pinned": True})  # the oldest, far past a page of 2
        page = listed(srv, "?limit=2")
        assert [row["id"] for row in page["data"]] == ["p5", "p4", "p0"]
        assert page["has_more"] is True  # two unpinned rows filled the limit
        page = listed(srv, "?limit=2&offset=4")  # p1, then p0 itself: no back-fill of what is on the page
        assert [row["id"] for row in page["data"]] == ["p1", "p0"]
        assert page["has_more"] is False  # one unpinned row
        patch(srv, "p5", {"pinned": True})  # a pinned row inside the window stays where it is
        page = listed(srv, "?limit=2")
        assert [row["id"] for row in page["data"]] == ["p5", "p4", "p0"]
        assert page["has_more"] is False  # V2: only the unpinned p4 counts
        page = listed(srv, "?limit=2&offset=2")  # p5 was on an earlier page: not back-filled again
        assert [row["id"] for row in page["data"]] == ["p3", "p2", "p0"]
        patch(srv, "p0", {"hidden": True})  # hidden wins over pinned
        assert "p0" not in [row["id"] for row in listed(srv, "?limit=2")["data"]]
    finally:
        srv.stop()


def test_0_19_0_is_unchanged(old: RunningServer) -> None:
    """0.19.0 (the default): no flag keys, PATCH of them 400 `unsupported_session_field`, no new columns."""
    session = create(old, "old-flags")
    assert "pinned" not in session and "archived" not in session and "hidden" not in session
    for field in ("pinned", "archived", "hidden", "unread"):
        response = patch(old, "old-flags", {field: True})
        assert response.status_code == 400
        assert response.json()["error"] == {"message": f"Unsupported session fields: {field}",
                                            "type": "invalid_request_error", "param": None,
                                            "code": "unsupported_session_field"}
    with db(old) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    assert not {"pinned", "hidden", "last_read_at"} & columns


def test_a_newer_profiles_home_has_the_columns_from_the_start(newer: RunningServer) -> None:
    """store/schema.py: the columns as upstream's v30 SCHEMA_SQL declares them; schema_version stays 22."""
    newer.client.get("/api/sessions")
    with db(newer) as conn:
        info = {row[1]: (row[2], row[3], row[4]) for row in conn.execute("PRAGMA table_info(sessions)")}
        version = conn.execute("SELECT version FROM schema_version").fetchone()[0]
    assert info["pinned"] == ("INTEGER", 1, "0") and info["hidden"] == ("INTEGER", 1, "0")
    assert info["last_read_at"] == ("REAL", 0, None)
    assert version == 22


def test_remembered_reads_see_every_flag_change(newer: RunningServer) -> None:
    """store/read_cache.py: a flag PATCH, and a flag another process writes, are in the very next
    list and session answers (the remembered answers are of one database state only)."""
    create(newer, "cache-flags")
    ids = [row["id"] for row in listed(newer, "?limit=200")["data"]]
    assert "cache-flags" in ids and listed(newer, "?limit=200")["data"] == listed(newer, "?limit=200")["data"]
    assert newer.client.get("/api/sessions/cache-flags").json()["session"]["pinned"] is False
    patch(newer, "cache-flags", {"pinned": True})
    assert newer.client.get("/api/sessions/cache-flags").json()["session"]["pinned"] is True
    assert next(r for r in listed(newer, "?limit=200")["data"] if r["id"] == "cache-flags")["pinned"] is True
    with db(newer) as conn:  # as real Hermes (or its desktop) would
        conn.execute("UPDATE sessions SET hidden = 1 WHERE id = 'cache-flags'")
    assert "cache-flags" not in [row["id"] for row in listed(newer, "?limit=200")["data"]]
    assert newer.client.get("/api/sessions/cache-flags").json()["session"]["hidden"] is True
