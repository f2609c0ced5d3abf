"""`GET /api/sessions`: selection, activity ordering, preview and compression-tip projection.

Upstream computes every session's "effective last activity" (the newest message,
or start time, across its compression chain) with a recursive CTE over the whole
table, then sorts: cost grows with the database. We draw the same page by merging
two index-ordered streams, newest first:

- messages by timestamp (each session's first appearance is its newest message);
- sessions by started_at (counts only for sessions without any message);

Each node reached is credited to itself and to its compression ancestors, which
is exactly the set of listed rows whose chain contains it. Because values arrive
in descending order, a listed row is first met at its effective activity, so the
page is exact once it is full and the next value is smaller. Cost is bounded by
the rows newer than the page, not by the table. Pathological cases (very deep
offsets, a filter that matches almost nothing) fall back to the upstream-shaped
CTE after a fixed budget; `reference_page_ids` is also what tests compare against.

The streams are read in windows, not row by row: one statement takes the newest
W message index entries and returns each session met there once, with its newest
timestamp and the columns the rules need (SQLite walks the W entries in C; Python
sees about W/20 rows). Everything above the window's lowest value is complete,
so the merge runs over that part; if the page is not full there, the window
grows fourfold. Row-by-row reading cost one GIL release per index entry, which
under concurrent requests turned into a convoy of threads waiting for the GIL.

A newer profile's reading (store/schema.py) changes three things where the file has the
columns: hidden rows are left out and pinned ones back-filled past the page (0.20.4's
session flags); a row's prompt is the one `system_prompt_hash` points to; and activity is
the freshest of `last_activity_at` and the newest message, which no message index orders,
so such a list takes the whole-table plan.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from hermes_server.domain.params import ListQuery
from hermes_server.domain.projection import SESSION_KEYS
from hermes_server.domain.session_flags import SHOWN_FLAGS
from hermes_server.store import lineage
from hermes_server.store.db import fetch_dicts
from hermes_server.store.schema import PLAIN, Reading

# Largest window (index entries per stream) before giving up on the incremental plan.
FAST_PATH_BUDGET = 80_000
# First windows, per page row wanted: about one session's messages, and a few sessions.
MESSAGES_PER_ROW = 24
SESSIONS_PER_ROW = 2
MIN_WINDOW = 16


def _meta_columns(hidden: bool) -> str:
    return f"""
    s.id, s.parent_session_id, s.source, s.started_at, s.ended_at, s.end_reason, s.archived,
    {lineage.MARKER_BRANCHED.format(a='s')} IS NOT NULL AS branched,
    {lineage.MARKER_DELEGATE.format(a='s')} IS NOT NULL AS delegate, {'s.hidden' if hidden else '0'} AS hidden
"""


@dataclass(frozen=True)
class _Statements:
    """The fast plan's statements for one reading (hidden rows filtered or not)."""

    meta: str
    message_window: str
    session_window: str


@cache
def _statements(hidden: bool) -> _Statements:
    columns = _meta_columns(hidden)
    return _Statements(
        meta=f"SELECT {columns} FROM sessions s WHERE s.id = ?",
        # The newest ? message index entries, one row per session met: its newest timestamp, then its
        # meta. (DISTINCT then a MAX probe per session is cheaper than GROUP BY, which sorts the window.)
        message_window=f"""
    SELECT (SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), {columns}
    FROM (SELECT DISTINCT session_id
          FROM (SELECT session_id FROM messages INDEXED BY hs_messages_timestamp
                ORDER BY timestamp DESC LIMIT ?)) w
    JOIN sessions s ON s.id = w.session_id
""",
        # The newest ? sessions by start; only those without any message (the others' activity is a message).
        session_window=f"""
    SELECT s.started_at, {columns}
    FROM (SELECT id FROM sessions INDEXED BY idx_sessions_started ORDER BY started_at DESC LIMIT ?) w
    JOIN sessions s ON s.id = w.id
    WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)
""")


# The lowest value of a window and how many entries it holds.
_MESSAGE_FLOOR_SQL = """
    SELECT MIN(timestamp), COUNT(*) FROM (SELECT timestamp FROM messages INDEXED BY hs_messages_timestamp
                                         ORDER BY timestamp DESC LIMIT ?)
"""
_SESSION_FLOOR_SQL = """
    SELECT MIN(started_at), COUNT(*) FROM (SELECT started_at FROM sessions INDEXED BY idx_sessions_started
                                          ORDER BY started_at DESC LIMIT ?)
"""


# Fields a compression root shows from its tip in the default list.
TIP_FIELDS = (
    "id", "ended_at", "end_reason", "message_count", "tool_call_count", "title",
    "last_active", "preview", "model", "system_prompt", "cwd", "git_branch", "git_repo_root",
)

# Stored columns a list row needs: what the projection shows or tests (system_prompt,
# model_config) and what a compression root takes from its tip. Not `s.*`: a real
# Hermes row carries a system prompt of several kB and columns the list never shows.
_COMPUTED = {"last_active", "preview", "_lineage_root_id"}
_ROW_COLUMNS = tuple(dict.fromkeys(
    [key for key in SESSION_KEYS if key not in _COMPUTED]
    + ["system_prompt", "model_config"]
    + [key for key in TIP_FIELDS if key not in _COMPUTED]
))

# A session's activity: its newest message, else its start (0.19.0); with the activity clock,
# the freshest of `last_activity_at` and that message, else the start (upstream's `_sql_freshest_of`).
_MESSAGE_ACTIVITY = "(SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = {a}.id)"
_FRESHEST_ACTIVITY = ("(SELECT MAX(v) FROM (SELECT {a}.last_activity_at AS v UNION ALL "
                      "SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = {a}.id))")
_PROMPT_RESOLVED = ("COALESCE((SELECT sp.prompt FROM system_prompts sp WHERE sp.hash = s.system_prompt_hash),"
                    " s.system_prompt) AS system_prompt")


def _activity(reading: Reading, alias: str) -> str:
    activity = _FRESHEST_ACTIVITY if reading.activity_clock else _MESSAGE_ACTIVITY
    return f"COALESCE({activity.format(a=alias)}, {alias}.started_at)"


@cache
def _row_select(reading: Reading) -> str:
    """The row statement for a reading narrowed to the file (store/schema.py `Reading.on`)."""
    columns = [f"s.{column}" for column in _ROW_COLUMNS]
    if reading.prompt_store:
        columns[_ROW_COLUMNS.index("system_prompt")] = _PROMPT_RESOLVED
    if reading.flags:
        columns += [f"s.{flag}" for flag in SHOWN_FLAGS]
    return f"""
    SELECT {", ".join(columns)},
      COALESCE((SELECT SUBSTR(REPLACE(REPLACE(m.content, X'0A', ' '), X'0D', ' '), 1, 63)
                FROM messages m
                WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
                ORDER BY m.timestamp, m.id LIMIT 1), '') AS _preview_raw,
      {_activity(reading, 's')} AS last_active
    FROM sessions s
"""


@dataclass(frozen=True)
class _Meta:
    id: str
    parent: str | None
    source: str | None
    started_at: Any
    ended_at: Any
    end_reason: str | None
    archived: Any
    branched: bool
    delegate: bool
    hidden: Any


class _Rows:
    """Per-request memo of the few columns the selection rules need."""

    def __init__(self, conn: sqlite3.Connection, statements: _Statements) -> None:
        self.conn = conn
        self.statements = statements
        self._cache: dict[str, _Meta | None] = {}

    def get(self, session_id: str) -> _Meta | None:
        if session_id not in self._cache:
            row = self.conn.execute(self.statements.meta, (session_id,)).fetchone()
            self._cache[session_id] = _Meta(*row) if row else None
        return self._cache[session_id]

    def remember(self, meta: _Meta) -> None:
        """Keep a row a window query already returned, so the rules need not fetch it again."""
        self._cache[meta.id] = meta


def preview_from_raw(raw: str) -> str:
    """Upstream's preview: the (already 63-char, newline-flattened) text, trimmed, 60 + `...`."""
    text = raw.strip()
    if not text:
        return ""
    return text[:60] + ("..." if len(text) > 60 else "")


def is_listed(rows: _Rows, meta: _Meta, query: ListQuery) -> bool:
    """The list's WHERE clause for one row (`hidden` reads 0 unless the reading filters it)."""
    if meta.archived != 0 or meta.hidden:
        return False
    if query.source and meta.source != query.source:
        return False
    if query.include_children:
        return True
    if meta.delegate:
        return False
    if meta.parent is None or meta.branched:
        return True
    parent = rows.get(meta.parent)
    return (
        parent is not None
        and parent.end_reason == "branched"
        and parent.ended_at is not None
        and meta.started_at >= parent.ended_at
    )


def chain_owners(rows: _Rows, node: str) -> list[str]:
    """`node` plus every row whose compression chain reaches it (its continuation ancestors)."""
    owners = [node]
    seen = {node}
    current = rows.get(node)
    while current is not None and current.parent is not None:
        if current.branched or current.delegate or (current.source or "") == "tool":
            break
        parent = rows.get(current.parent)
        if parent is None or parent.end_reason != "compression" or parent.id in seen:
            break
        owners.append(parent.id)
        seen.add(parent.id)
        current = parent
    return owners


def _window(conn: sqlite3.Connection, rows: _Rows, sql: str, floor_sql: str, size: int,
            from_messages: bool) -> tuple[list[tuple[Any, str, bool]], Any]:
    """(value, session id, from_messages) items of one stream window, and the value above which it is complete.

    The bound is None when the window holds the whole stream.
    """
    items = []
    for value, *meta in conn.execute(sql, (size,)):
        found = _Meta(*meta)
        rows.remember(found)
        items.append((value, found.id, from_messages))
    lowest, count = conn.execute(floor_sql, (size,)).fetchone()
    return items, (lowest if count >= size else None)


def _merge_page(rows: _Rows, items: list[tuple[Any, str, bool]], query: ListQuery) -> list[str]:
    """Listed ids in page order, from stream items sorted by descending value (ties: start, id)."""
    credited: set[str] = set()
    listed: set[str] = set()
    ordered: list[str] = []
    group: list[tuple[Any, str]] = []
    group_value: Any = object()
    for value, node, _ in items:
        if value != group_value:
            group.sort(reverse=True)
            ordered.extend(session_id for _, session_id in group)
            group = []
            group_value = value
        if node in credited:
            continue
        credited.add(node)
        for owner in chain_owners(rows, node):
            meta = rows.get(owner)
            if owner not in listed and meta is not None and is_listed(rows, meta, query):
                listed.add(owner)
                group.append((meta.started_at, owner))
    group.sort(reverse=True)
    ordered.extend(session_id for _, session_id in group)
    return ordered


def fast_page_ids(conn: sqlite3.Connection, query: ListQuery, budget: int = FAST_PATH_BUDGET,
                  reading: Reading = PLAIN) -> list[str] | None:
    """The ordered ids of one page, or None when the windows outgrew the budget or the
    activity clock is on (use the reference plan). `reading` is narrowed to the file already."""
    if reading.activity_clock:
        return None
    need = query.offset + query.limit
    message_window = min(budget, max(need * MESSAGES_PER_ROW, MIN_WINDOW))
    session_window = min(budget, max(need * SESSIONS_PER_ROW, MIN_WINDOW))
    statements = _statements(reading.flags)
    rows = _Rows(conn, statements)
    while True:
        from_messages, message_floor = _window(conn, rows, statements.message_window, _MESSAGE_FLOOR_SQL,
                                               message_window, True)
        from_sessions, session_floor = _window(conn, rows, statements.session_window, _SESSION_FLOOR_SQL,
                                               session_window, False)
        floors = [f for f in (message_floor, session_floor) if f is not None]
        floor = max(floors) if floors else None
        items = [item for item in from_messages + from_sessions if floor is None or item[0] > floor]
        items.sort(key=lambda item: item[0], reverse=True)
        ordered = _merge_page(rows, items, query)
        if floor is None or len(ordered) >= need:
            return ordered[query.offset:need]
        # Grow the stream whose window cut the merge short (both when they cut at the same value).
        grow_messages = message_floor is not None and message_floor == floor
        grow_sessions = session_floor is not None and session_floor == floor
        if (grow_messages and message_window >= budget) or (grow_sessions and session_window >= budget):
            return None
        if grow_messages:
            message_window = min(budget, message_window * 4)
        if grow_sessions:
            session_window = min(budget, session_window * 4)


def _where(query: ListQuery, reading: Reading, pinned_only: bool) -> tuple[str, list[Any]]:
    clauses = ["s.archived = 0"]
    if reading.flags:
        clauses.append("s.hidden = 0")
    if pinned_only:
        clauses.append("s.pinned != 0")
    params: list[Any] = []
    if not query.include_children:
        branched = lineage.MARKER_BRANCHED.format(a="s")
        clauses.append(
            f"(s.parent_session_id IS NULL OR {branched} IS NOT NULL OR EXISTS (SELECT 1 FROM sessions p"
            " WHERE p.id = s.parent_session_id AND p.end_reason = 'branched' AND s.started_at >= p.ended_at))"
        )
        clauses.append(f"{lineage.MARKER_DELEGATE.format(a='s')} IS NULL")
    if query.source:
        clauses.append("s.source = ?")
        params.append(query.source)
    return " AND ".join(clauses), params


def reference_page_ids(conn: sqlite3.Connection, query: ListQuery, reading: Reading = PLAIN,
                       *, pinned_only: bool = False) -> list[str]:
    """The whole-table plan, shaped like upstream's query: correct for any input, O(sessions).
    `pinned_only` lists the pinned rows alone (every one: the limit is not applied).

    UNION rather than upstream's UNION ALL: identical on real data (a node has one
    parent, so each chain member is reached once), but it terminates on a
    parent-link cycle, where upstream's query never returns.
    """
    where, params = _where(query, reading, pinned_only)
    sql = f"""
        WITH RECURSIVE chain(root_id, cur_id) AS (
            SELECT s.id, s.id FROM sessions s WHERE {where}
            UNION
            SELECT chain.root_id, c.id FROM chain
            JOIN sessions p ON p.id = chain.cur_id
            JOIN sessions c ON c.parent_session_id = chain.cur_id
            WHERE p.end_reason = 'compression' AND {lineage.CONTINUATION_ELIGIBLE}
        ),
        chain_max AS (
            SELECT root_id, MAX((SELECT {_activity(reading, 'x')} FROM sessions x WHERE x.id = cur_id)) AS activity
            FROM chain GROUP BY root_id
        )
        SELECT s.id FROM sessions s LEFT JOIN chain_max cm ON cm.root_id = s.id
        WHERE {where}
        ORDER BY COALESCE(cm.activity, s.started_at) DESC, s.started_at DESC, s.id DESC
        LIMIT ? OFFSET ?
    """
    limits = [-1, 0] if pinned_only else [query.limit, query.offset]
    rows = conn.execute(sql, params + params + limits).fetchall()
    return [row[0] for row in rows]


def list_row(conn: sqlite3.Connection, session_id: str, reading: Reading = PLAIN) -> dict[str, Any] | None:
    """One row with its computed `preview` and `last_active`."""
    found = list_rows(conn, [session_id], reading)
    return found[0] if found else None


def list_rows(conn: sqlite3.Connection, ids: list[str], reading: Reading = PLAIN) -> list[dict[str, Any]]:
    """`list_row` for each id (in that order, absent ones skipped), in one statement."""
    if not ids:
        return []
    found = {}
    sql = _row_select(reading) + f" WHERE s.id IN ({','.join('?' * len(ids))})"
    for out in fetch_dicts(conn, sql, ids):
        out["preview"] = preview_from_raw(out.pop("_preview_raw") or "")
        found[out["id"]] = out
    return [found[session_id] for session_id in ids if session_id in found]


def project_tip(conn: sqlite3.Connection, row: dict[str, Any], reading: Reading = PLAIN) -> dict[str, Any]:
    """Show a compression root as its tip, keeping the root's start, counters and source."""
    if row.get("end_reason") != "compression":
        return row
    tip_id = lineage.compression_tip(conn, row["id"])
    if tip_id == row["id"]:
        return row
    tip = list_row(conn, tip_id, reading)
    if tip is None:
        return row
    merged = dict(row)
    for key in TIP_FIELDS:
        merged[key] = tip[key]
    merged["_lineage_root_id"] = row["id"]
    return merged


def _page_ids(conn: sqlite3.Connection, query: ListQuery, reading: Reading) -> list[str]:
    ids = fast_page_ids(conn, query, reading=reading)
    return reference_page_ids(conn, query, reading) if ids is None else ids


def list_sessions(conn: sqlite3.Connection, query: ListQuery, reading: Reading = PLAIN) -> list[dict[str, Any]]:
    """The page of rows `GET /api/sessions` shows, before the client-safe projection.

    With the session flags, pinned rows ranked past the page (not on it or an earlier one)
    follow it, in activity order: 0.20.4's `include_pinned` back-fill.
    """
    if query.limit == 0:
        return []
    reading = reading.on(conn)
    if reading.flags:
        window = _page_ids(conn, replace(query, offset=0, limit=query.offset + query.limit), reading)
        seen = set(window)
        pinned = reference_page_ids(conn, query, reading, pinned_only=True)
        ids = window[query.offset:] + [session_id for session_id in pinned if session_id not in seen]
    else:
        ids = _page_ids(conn, query, reading)
    page = list_rows(conn, ids, reading)
    if not query.include_children:
        page = [project_tip(conn, row, reading) for row in page]
    return page
