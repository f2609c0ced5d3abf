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
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Iterator

from hermes_server.domain.params import ListQuery
from hermes_server.store import lineage

# Stream rows examined before giving up on the incremental plan.
FAST_PATH_BUDGET = 20_000

_META_SQL = f"""
    SELECT s.id, s.parent_session_id, s.source, s.started_at, s.ended_at, s.end_reason, s.archived,
           {lineage.MARKER_BRANCHED.format(a='s')} IS NOT NULL AS branched,
           {lineage.MARKER_DELEGATE.format(a='s')} IS NOT NULL AS delegate
    FROM sessions s WHERE s.id = ?
"""

_ROW_SQL = """
    SELECT s.*,
      COALESCE((SELECT SUBSTR(REPLACE(REPLACE(m.content, X'0A', ' '), X'0D', ' '), 1, 63)
                FROM messages m
                WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
                ORDER BY m.timestamp, m.id LIMIT 1), '') AS _preview_raw,
      COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = s.id), s.started_at)
        AS last_active
    FROM sessions s WHERE s.id = ?
"""

# Fields a compression root shows from its tip in the default list.
TIP_FIELDS = (
    "id", "ended_at", "end_reason", "message_count", "tool_call_count", "title",
    "last_active", "preview", "model", "system_prompt", "cwd", "git_branch", "git_repo_root",
)


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


class _Rows:
    """Per-request memo of the few columns the selection rules need."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._cache: dict[str, _Meta | None] = {}

    def get(self, session_id: str) -> _Meta | None:
        if session_id not in self._cache:
            row = self.conn.execute(_META_SQL, (session_id,)).fetchone()
            self._cache[session_id] = _Meta(*row) if row else None
        return self._cache[session_id]


def preview_from_raw(raw: str) -> str:
    """Upstream's preview: the (already 63-char, newline-flattened) text, trimmed, 60 + `...`."""
    text = raw.strip()
    if not text:
        return ""
    return text[:60] + ("..." if len(text) > 60 else "")


def is_listed(rows: _Rows, meta: _Meta, query: ListQuery) -> bool:
    """The list's WHERE clause for one row."""
    if meta.archived != 0:
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


def _activity_stream(conn: sqlite3.Connection) -> Iterator[tuple[Any, str, bool]]:
    """(value, session id, from_messages) in descending value order, merged from two indexes."""
    messages = conn.execute(
        "SELECT timestamp, session_id FROM messages INDEXED BY hs_messages_timestamp ORDER BY timestamp DESC"
    )
    sessions = conn.execute(
        "SELECT started_at, id FROM sessions INDEXED BY idx_sessions_started ORDER BY started_at DESC"
    )
    m = messages.fetchone()
    s = sessions.fetchone()
    while m is not None or s is not None:
        if s is None or (m is not None and m[0] >= s[0]):
            yield m[0], m[1], True
            m = messages.fetchone()
        else:
            yield s[0], s[1], False
            s = sessions.fetchone()


def fast_page_ids(conn: sqlite3.Connection, query: ListQuery, budget: int = FAST_PATH_BUDGET) -> list[str] | None:
    """The ordered ids of one page, or None when the budget ran out (use the reference plan)."""
    need = query.offset + query.limit
    rows = _Rows(conn)
    credited: set[str] = set()
    listed: set[str] = set()
    ordered: list[str] = []
    group: list[tuple[Any, str]] = []
    group_value: Any = object()
    steps = 0
    stream = _activity_stream(conn)
    while True:
        item = next(stream, None)
        value = item[0] if item is not None else None
        if item is None or value != group_value:
            group.sort(reverse=True)
            ordered.extend(session_id for _, session_id in group)
            group = []
            if item is None or len(ordered) >= need:
                break
            group_value = value
        steps += 1
        if steps > budget:
            return None
        _, node, from_messages = item
        if node in credited:
            continue
        if not from_messages and conn.execute(
            "SELECT 1 FROM messages WHERE session_id = ? LIMIT 1", (node,)
        ).fetchone():
            continue  # its activity is its newest message, met in the other stream
        credited.add(node)
        for owner in chain_owners(rows, node):
            meta = rows.get(owner)
            if owner not in listed and meta is not None and is_listed(rows, meta, query):
                listed.add(owner)
                group.append((meta.started_at, owner))
    return ordered[query.offset:need]


def _where(query: ListQuery) -> tuple[str, list[Any]]:
    clauses = ["s.archived = 0"]
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


def reference_page_ids(conn: sqlite3.Connection, query: ListQuery) -> list[str]:
    """The whole-table plan, shaped like upstream's query: correct for any input, O(sessions).

    UNION rather than upstream's UNION ALL: identical on real data (a node has one
    parent, so each chain member is reached once), but it terminates on a
    parent-link cycle, where upstream's query never returns.
    """
    where, params = _where(query)
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
            SELECT root_id, MAX(COALESCE(
                (SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = cur_id),
                (SELECT started_at FROM sessions x WHERE x.id = cur_id))) AS activity
            FROM chain GROUP BY root_id
        )
        SELECT s.id FROM sessions s LEFT JOIN chain_max cm ON cm.root_id = s.id
        WHERE {where}
        ORDER BY COALESCE(cm.activity, s.started_at) DESC, s.started_at DESC, s.id DESC
        LIMIT ? OFFSET ?
    """
    rows = conn.execute(sql, params + params + [query.limit, query.offset]).fetchall()
    return [row[0] for row in rows]


def list_row(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """One row with its computed `preview` and `last_active`."""
    row = conn.execute(_ROW_SQL, (session_id,)).fetchone()
    if row is None:
        return None
    out = dict(row)
    out["preview"] = preview_from_raw(out.pop("_preview_raw") or "")
    return out


def project_tip(conn: sqlite3.Connection, row: dict[str, Any]) -> dict[str, Any]:
    """Show a compression root as its tip, keeping the root's start, counters and source."""
    if row.get("end_reason") != "compression":
        return row
    tip_id = lineage.compression_tip(conn, row["id"])
    if tip_id == row["id"]:
        return row
    tip = list_row(conn, tip_id)
    if tip is None:
        return row
    merged = dict(row)
    for key in TIP_FIELDS:
        merged[key] = tip[key]
    merged["_lineage_root_id"] = row["id"]
    return merged


def list_sessions(conn: sqlite3.Connection, query: ListQuery) -> list[dict[str, Any]]:
    """The page of rows `GET /api/sessions` shows, before the client-safe projection."""
    if query.limit == 0:
        return []
    ids = fast_page_ids(conn, query)
    if ids is None:
        ids = reference_page_ids(conn, query)
    page = [row for row in (list_row(conn, session_id) for session_id in ids) if row is not None]
    if not query.include_children:
        page = [project_tip(conn, row) for row in page]
    return page
