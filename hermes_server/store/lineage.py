"""Parent/child rules: compression tips, `/messages` resolution, delete cascade.

Three kinds of child share `parent_session_id`:
- compression continuations: the parent ended with `compression` and the child
  carries no `_branched_from`/`_delegate_from` marker and is not a `tool` row;
- delegates: `model_config._delegate_from` is set (deleted with their parent);
- everything else (forks, branches, gateway children): unlinked on delete.
"""

from __future__ import annotations

import sqlite3

# SQL predicates on a child row aliased `c`: "may continue a compression chain".
MARKER_BRANCHED = "json_extract(COALESCE({a}.model_config, '{{}}'), '$._branched_from')"
MARKER_DELEGATE = "json_extract(COALESCE({a}.model_config, '{{}}'), '$._delegate_from')"
CONTINUATION_ELIGIBLE = (
    f"{MARKER_BRANCHED.format(a='c')} IS NULL"
    f" AND {MARKER_DELEGATE.format(a='c')} IS NULL"
    " AND COALESCE(c.source, '') != 'tool'"
)

MAX_TIP_HOPS = 100

_BEST_CONTINUATION = f"""
    SELECT c.id FROM sessions p JOIN sessions c ON c.parent_session_id = p.id
    WHERE p.id = ? AND p.end_reason = 'compression' AND {CONTINUATION_ELIGIBLE}
    ORDER BY
      CASE WHEN c.end_reason = 'compression' THEN 0 WHEN c.ended_at IS NULL THEN 1 ELSE 2 END,
      COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = c.id), c.started_at) DESC,
      c.started_at DESC,
      c.id DESC
    LIMIT 1
"""


def compression_tip(conn: sqlite3.Connection, session_id: str) -> str:
    """Follow the best continuation while the current node ended with `compression`.

    Preference: a child that itself continues the chain, then an open child, then
    the rest; ties by latest activity, start time, id. Stops on a cycle or after
    100 hops.
    """
    current = session_id
    seen = {current}
    for _ in range(MAX_TIP_HOPS):
        row = conn.execute(_BEST_CONTINUATION, (current,)).fetchone()
        if row is None or row[0] in seen:
            return current
        current = row[0]
        seen.add(current)
    return current


def resolve_messages_target(conn: sqlite3.Connection, session_id: str) -> str:
    """`/messages` follows compression continuations only, to the same tip as the list.

    Upstream 0.19.0 also walks into the newest untagged child of any kind, so a
    fork takes over its source's transcript; its documentation says it resolves a
    compression chain, and that is what we do (docs/differences.md, D2).
    """
    return compression_tip(conn, session_id)


_NEWEST_UNTAGGED_CHILD = f"""
    SELECT c.id FROM sessions c WHERE c.parent_session_id = ? AND {CONTINUATION_ELIGIBLE}
    ORDER BY c.started_at DESC, c.id DESC LIMIT 1
"""
MAX_RESUME_HOPS = 32


def upstream_messages_target(conn: sqlite3.Connection, session_id: str) -> str:
    """0.19.0's `/messages` resolution (D2 off): the compression tip, then down the newest
    untagged child of any kind, to the deepest node that has messages (32 hops at most)."""
    start = compression_tip(conn, session_id)
    current, seen, best = start, {start}, None
    for _ in range(MAX_RESUME_HOPS):
        if conn.execute("SELECT 1 FROM messages WHERE session_id = ? LIMIT 1", (current,)).fetchone():
            best = current
        row = conn.execute(_NEWEST_UNTAGGED_CHILD, (current,)).fetchone()
        if row is None or not row[0] or row[0] in seen:
            break
        current = row[0]
        seen.add(current)
    return best if best is not None else start


def is_compression_ancestor(conn: sqlite3.Connection, ancestor_id: str, descendant_id: str) -> bool:
    """True when `ancestor_id` is reached by walking up edges whose parent ended `compression`."""
    if ancestor_id == descendant_id:
        return False
    row = conn.execute(
        """
        WITH RECURSIVE up(id) AS (
            SELECT ?
            UNION
            SELECT p.id FROM up JOIN sessions c ON c.id = up.id
            JOIN sessions p ON p.id = c.parent_session_id
            WHERE p.end_reason = 'compression'
        )
        SELECT 1 FROM up WHERE id = ? AND id != ? LIMIT 1
        """,
        (descendant_id, ancestor_id, descendant_id),
    ).fetchone()
    return row is not None


def delegate_descendants(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Rows deleted with `session_id`: marker points into the set, or parented in it with any marker."""
    marker = MARKER_DELEGATE.format(a="s")
    found = {session_id}
    frontier = [session_id]
    while frontier:
        holes = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT s.id FROM sessions s WHERE {marker} IN ({holes})"
            f" OR (s.parent_session_id IN ({holes}) AND {marker} IS NOT NULL)",
            frontier + frontier,
        ).fetchall()
        frontier = [row[0] for row in rows if row[0] not in found]
        found.update(frontier)
    found.discard(session_id)
    return sorted(found)
