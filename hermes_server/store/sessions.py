"""Session rows: read one, create, title, close, delete, fork child.

Each function takes an open connection and runs inside the transaction that
`Database.read`/`Database.write` opened for it.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes_server.domain.errors import SessionExists, SessionGone, TitleConflict
from hermes_server.domain.titles import like_escape, lineage_base, next_lineage_title, sanitize_title
from hermes_server.store import lineage
from hermes_server.store.db import fetch_dicts, loop_read
from hermes_server.store.schema import PLAIN, Reading

# A v25+ row keeps its prompt in `system_prompts` (upstream reads `COALESCE(sp.prompt, s.system_prompt)`).
_RESOLVED_PROMPT_SQL = (
    "SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _system_prompt_resolved FROM sessions s"
    " LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash WHERE s.id = ?"
)

# Upstream's `_set_lineage_column`: a flag is set on the row's whole compression lineage at once.
_LINEAGE_SQL = """
    WITH RECURSIVE
      ancestors(id) AS (
        SELECT ? UNION
        SELECT parent.id FROM ancestors a JOIN sessions child ON child.id = a.id
        JOIN sessions parent ON parent.id = child.parent_session_id WHERE parent.end_reason = 'compression'),
      descendants(id) AS (
        SELECT ? UNION
        SELECT child.id FROM descendants d JOIN sessions parent ON parent.id = d.id
        JOIN sessions child ON child.parent_session_id = parent.id WHERE parent.end_reason = 'compression')
    UPDATE sessions SET {column} = ?
    WHERE id IN (SELECT id FROM ancestors UNION SELECT id FROM descendants)
"""
# The column each PATCH flag writes, and the value it writes for true/false (`now` for a read mark).
_FLAG_COLUMNS = {"pinned": "pinned", "archived": "archived", "hidden": "hidden", "unread": "last_read_at"}


@loop_read
def get_session(conn: sqlite3.Connection, session_id: str, reading: Reading = PLAIN) -> dict[str, Any] | None:
    """The whole row for an exact, case-sensitive id (archived rows included); with a reading
    that uses the prompt store, `system_prompt` is the prompt a v25+ row points to."""
    if reading.on(conn).prompt_store:
        rows = fetch_dicts(conn, _RESOLVED_PROMPT_SQL, (session_id,))
        for row in rows:
            row["system_prompt"] = row.pop("_system_prompt_resolved")
    else:
        rows = fetch_dicts(conn, "SELECT * FROM sessions WHERE id = ?", (session_id,))
    return rows[0] if rows else None


@loop_read
def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether a row with exactly this id exists (create and fork refuse it with 409)."""
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def title_holder(conn: sqlite3.Connection, title: str, session_id: str) -> str | None:
    """Id of another session that already carries exactly `title`."""
    row = conn.execute("SELECT id FROM sessions WHERE title = ? AND id != ?", (title, session_id)).fetchone()
    return row[0] if row else None


def create_session(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    model: str | None,
    system_prompt: str | None,
    title: str | None,
    now: float,
    source: str = "api_server",
) -> dict[str, Any]:
    """POST /api/sessions in one transaction: 409 check, insert, title, re-read.

    `title` is the client's value as `str()` (None: not given). It is sanitised
    after the 409 check, as upstream does; a title that is too long (D1) or held
    by another session aborts the transaction, so no row is left behind.
    """
    if session_exists(conn, session_id):
        raise SessionExists(session_id)
    conn.execute(
        "INSERT INTO sessions (id, source, model, system_prompt, started_at) VALUES (?, ?, ?, ?, ?)",
        (session_id, source, model, system_prompt, now),
    )
    if title is not None:
        clean = sanitize_title(title)
        if clean:
            holder = title_holder(conn, clean, session_id)
            if holder is not None:
                raise TitleConflict(f"Title already in use by session {holder}")
        conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (clean, session_id))
    return get_session(conn, session_id) or {}


def set_title(conn: sqlite3.Connection, session_id: str, title: str | None) -> None:
    """PATCH/fork title setter: unique, except that a compression ancestor hands its title over."""
    if title:
        holder = title_holder(conn, title, session_id)
        if holder is not None:
            if not lineage.is_compression_ancestor(conn, holder, session_id):
                raise TitleConflict(f"Title '{title}' is already in use by session {holder}")
            conn.execute("UPDATE sessions SET title = NULL WHERE id = ?", (holder,))
    conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))


def set_flags(conn: sqlite3.Connection, session_id: str, changes: dict[str, bool], now: float) -> None:
    """PATCH's flags, each over the row's compression lineage as upstream's setters do; `unread`
    sets the read watermark `last_read_at` (0.0: unread, `now`: read up to now)."""
    for field, value in changes.items():
        if field == "unread":
            stored: float | int = 0.0 if value else now
        else:
            stored = int(value)
        conn.execute(_LINEAGE_SQL.format(column=_FLAG_COLUMNS[field]), (session_id, session_id, stored))


def end_session(conn: sqlite3.Connection, session_id: str, reason: str, now: float) -> None:
    """First close wins: only an open row gets `ended_at`/`end_reason`."""
    conn.execute(
        "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
        (now, reason, session_id),
    )


def delete_session(conn: sqlite3.Connection, session_id: str) -> bool:
    """Delete a row and its messages; delegates go with it, every other child is unlinked."""
    if not session_exists(conn, session_id):
        return False
    doomed = lineage.delegate_descendants(conn, session_id)
    if doomed:
        holes = ",".join("?" * len(doomed))
        conn.execute(f"DELETE FROM messages WHERE session_id IN ({holes})", doomed)
        conn.execute(f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({holes})", doomed)
        conn.execute(f"DELETE FROM sessions WHERE id IN ({holes})", doomed)
    conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?", (session_id,))
    conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    return True


def create_fork_child(
    conn: sqlite3.Connection, child_id: str, source: dict[str, Any], now: float
) -> None:
    """Fork step 2: the `api_server` child carrying model and system prompt, parented to the source.

    Upstream writes an upsert that fills NULL columns on conflict; after the 409
    check a conflict only happens on a race, and then we fill the same way. A source
    deleted since the request found it is a 404, not a foreign-key failure.
    """
    if not session_exists(conn, source["id"]):
        raise SessionGone(source["id"])
    conn.execute(
        "INSERT INTO sessions (id, source, model, system_prompt, parent_session_id, started_at)"
        " VALUES (?, 'api_server', ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET"
        " model = COALESCE(sessions.model, excluded.model),"
        " system_prompt = COALESCE(sessions.system_prompt, excluded.system_prompt),"
        " parent_session_id = COALESCE(sessions.parent_session_id, excluded.parent_session_id)",
        (child_id, source.get("model"), source.get("system_prompt"), source["id"], now),
    )


def lineage_titles(conn: sqlite3.Connection, base: str) -> list[str]:
    """Titles equal to `base` or LIKE `base #%` (ASCII case-insensitive, as SQL LIKE)."""
    rows = conn.execute(
        "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'",
        (base, like_escape(base) + " #%"),
    ).fetchall()
    return [row[0] for row in rows]


def next_title(conn: sqlite3.Connection, base: str) -> str:
    """The next free lineage title for a fork of a session titled `base`."""
    stem = lineage_base(base)
    return next_lineage_title(stem, lineage_titles(conn, stem))
