"""Message rows: read the active transcript, append turns, copy for a fork."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from hermes_server.domain.errors import SessionGone
from hermes_server.domain.projection import decode_content, decode_tool_calls, encode_content
from hermes_server.domain.titles import scrub_surrogates
from hermes_server.store import lineage
from hermes_server.store.db import fetch_dicts, loop_read
from hermes_server.store.sessions import session_exists

_API_COLUMNS = (
    "id, session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, "
    "token_count, finish_reason, reasoning, reasoning_content"
)


@loop_read
def active_messages(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """Active rows in insertion order, content and tool_calls decoded (the 12 API keys)."""
    out = fetch_dicts(
        conn,
        f"SELECT {_API_COLUMNS} FROM messages WHERE session_id = ? AND active = 1 ORDER BY id",
        (session_id,),
    )
    for msg in out:
        msg["content"] = decode_content(msg["content"])
        msg["tool_calls"] = decode_tool_calls(msg["tool_calls"])
    return out


@loop_read
def resolved_transcript(conn: sqlite3.Connection, session_id: str,
                        fork_takes_over: bool = False) -> tuple[str, list[dict[str, Any]]] | None:
    """GET /messages in one read snapshot: the 404 check, the compression resolution and the rows.

    None when the exact id is absent; else the resolved id and its active messages.
    `fork_takes_over` is 0.19.0's resolution (D2 off).
    """
    if not session_exists(conn, session_id):
        return None
    resolve = lineage.upstream_messages_target if fork_takes_over else lineage.resolve_messages_target
    target = resolve(conn, session_id)
    return target, active_messages(conn, target)


def tool_call_weight(tool_calls: Any) -> int:
    """How much a message adds to tool_call_count: list length, 1 for any other non-null value."""
    if tool_calls is None:
        return 0
    return len(tool_calls) if isinstance(tool_calls, list) else 1


def _text(value: Any) -> Any:
    return scrub_surrogates(value) if isinstance(value, str) else value


def append_message(
    conn: sqlite3.Connection,
    session_id: str,
    role: str,
    content: Any,
    timestamp: float,
    *,
    tool_calls: Any = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    token_count: int | None = None,
    finish_reason: str | None = None,
    reasoning: str | None = None,
    reasoning_content: str | None = None,
) -> int:
    """Insert one row and bump the session's message and tool-call counters."""
    stored_calls = json.dumps(tool_calls) if tool_calls else None
    cur = conn.execute(
        "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,"
        " timestamp, token_count, finish_reason, reasoning, reasoning_content)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id, role, _text(encode_content(content)), tool_call_id, stored_calls, tool_name,
            timestamp, token_count, finish_reason, _text(reasoning), _text(reasoning_content),
        ),
    )
    conn.execute(
        "UPDATE sessions SET message_count = message_count + 1,"
        " tool_call_count = tool_call_count + ? WHERE id = ?",
        (tool_call_weight(tool_calls), session_id),
    )
    assert cur.lastrowid is not None  # set by every INSERT; the assert only narrows the type
    return cur.lastrowid


_COPY_COLUMNS = (
    "role, content, tool_call_id, tool_calls, tool_name, effect_disposition, timestamp,"
    " token_count, finish_reason, reasoning, reasoning_content, reasoning_details,"
    " codex_reasoning_items, codex_message_items, platform_message_id, observed, api_content"
)


def _double_encoded(value: Any) -> Any:
    """Upstream's fork copy stores these JSON columns as a JSON string of the stored text."""
    return json.dumps(value) if value else None


def _copied_row(row: sqlite3.Row, tool_calls: Any, target: str) -> tuple[Any, ...]:
    """The INSERT values of one copy; `tool_calls` is the row's decoded tool_calls."""
    assistant = row["role"] == "assistant"
    api_content = row["api_content"]
    return (
        target, row["role"], _text(encode_content(decode_content(row["content"]))),
        row["tool_call_id"], json.dumps(tool_calls) if tool_calls else None, _text(row["tool_name"]),
        row["effect_disposition"], float(row["timestamp"]), row["token_count"], row["finish_reason"],
        _text(row["reasoning"]) if assistant else None,
        _text(row["reasoning_content"]) if assistant else None,
        _double_encoded(row["reasoning_details"]) if assistant else None,
        _double_encoded(row["codex_reasoning_items"]) if assistant else None,
        _double_encoded(row["codex_message_items"]) if assistant else None,
        row["platform_message_id"] or None, 1 if row["observed"] else 0,
        _text(api_content) if isinstance(api_content, str) else None,
    )


def copy_active_messages(conn: sqlite3.Connection, source_id: str, target_id: str) -> None:
    """Replace `target_id`'s transcript with copies of `source_id`'s active rows.

    Timestamps are preserved (so a fork sorts at its source's last activity);
    reasoning fields survive only on assistant rows. The target's message and
    tool-call counters are set to what was copied. A target deleted meanwhile is a 404.
    """
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (target_id,)).fetchone() is None:
        raise SessionGone(target_id)
    rows = conn.execute(
        f"SELECT {_COPY_COLUMNS} FROM messages WHERE session_id = ? AND active = 1 ORDER BY id",
        (source_id,),
    ).fetchall()
    conn.execute("DELETE FROM messages WHERE session_id = ?", (target_id,))
    decoded_calls = [decode_tool_calls(row["tool_calls"]) for row in rows]
    copies = [_copied_row(row, calls, target_id) for row, calls in zip(rows, decoded_calls, strict=True)]
    conn.executemany(
        "INSERT INTO messages (session_id, " + _COPY_COLUMNS + ", active, compacted)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0)",
        copies,
    )
    conn.execute(
        "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
        (len(copies), sum(tool_call_weight(calls) for calls in decoded_calls), target_id),
    )
