"""Writing a chat turn: the session-row traces, the transcript rows, token accounting, rotation.

A turn is two write transactions, so what is durable at each moment is simple
to state (README, "What a chat turn persists"):

1. `begin_turn`, before the agent runs: the session-row upsert (a NULL `model` or
   `model_config` is filled; `system_prompt` is overwritten when the turn starts
   on an empty history, filled when NULL), the optional compression rotation,
   and the user row.
2. `finish_turn`, after the agent returned its result: the assistant (and tool)
   rows and one token-accounting increment.

The per-turn `system_message` is never written anywhere.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from hermes_server.domain.compression import needs_rotation, summary_text
from hermes_server.domain.errors import TitleConflict
from hermes_server.domain.titles import TitleTooLong, sanitize_title
from hermes_server.domain.usage import Usage
from hermes_server.store.messages import append_message
from hermes_server.store.sessions import end_session, get_session, next_title, set_title

# What upstream's agent records as the run configuration of an API-server turn.
MODEL_CONFIG = json.dumps({"max_iterations": 90, "reasoning_config": None, "max_tokens": None})

_MESSAGE_FIELDS = ("tool_calls", "tool_call_id", "tool_name", "finish_reason", "reasoning", "reasoning_content")


@dataclass(frozen=True)
class TurnStart:
    """Where the turn is written, and the summary message when it rotated."""

    target_id: str
    summary: dict[str, Any] | None = None


def count_active(conn: sqlite3.Connection, session_id: str) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 1", (session_id,)
    ).fetchone()[0]


def _upsert_session(conn: sqlite3.Connection, session_id: str, model: str, now: float) -> None:
    """Fill NULL `model`/`model_config`; re-create the row as upstream does if it vanished mid-turn."""
    conn.execute(
        "INSERT INTO sessions (id, source, model, model_config, started_at) VALUES (?, 'api_server', ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET"
        " model = COALESCE(sessions.model, excluded.model),"
        " model_config = COALESCE(sessions.model_config, excluded.model_config)",
        (session_id, model, MODEL_CONFIG, now),
    )


def _rotate(conn: sqlite3.Connection, parent_id: str, child_id: str, compacted: int, now: float) -> dict[str, Any]:
    """Close the parent with `compression` and open its continuation; returns the summary message.

    The child keeps the parent's source, model and system prompt, gets the next
    lineage title (left untitled if that title would be too long) and the
    agent's own model_config, without fork or delegate markers, so the list
    and `/messages` treat it as the chain's tip.
    """
    parent = get_session(conn, parent_id) or {}
    end_session(conn, parent_id, "compression", now)
    conn.execute(
        "INSERT INTO sessions (id, source, model, model_config, system_prompt, parent_session_id, started_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (child_id, parent.get("source") or "api_server", parent.get("model"), MODEL_CONFIG,
         parent.get("system_prompt"), parent_id, now),
    )
    if parent.get("title"):
        try:
            set_title(conn, child_id, sanitize_title(next_title(conn, parent["title"])))
        except (TitleTooLong, TitleConflict):
            pass
    summary = {"role": "assistant", "content": summary_text(parent_id, compacted)}
    append_message(conn, child_id, "assistant", summary["content"], now)
    return summary


def begin_turn(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    model: str,
    system_prompt: str,
    fresh_history: bool,
    user_content: str | None,
    now: float,
    compress_after: int | None = None,
    continuation_id: str = "",
) -> TurnStart:
    """Step 1 of a turn (see the module docstring). Chat never reopens an ended session."""
    _upsert_session(conn, session_id, model, now)
    conn.execute(
        "UPDATE sessions SET system_prompt = ? WHERE id = ? AND (? OR COALESCE(system_prompt, '') = '')",
        (system_prompt, session_id, fresh_history),
    )
    start = TurnStart(session_id)
    active = count_active(conn, session_id)
    if needs_rotation(active, compress_after):
        start = TurnStart(continuation_id, _rotate(conn, session_id, continuation_id, active, now))
    append_message(conn, start.target_id, "user", user_content, now)
    return start


def _account(conn: sqlite3.Connection, session_id: str, usage: Usage, reported_model: str | None, now: float) -> None:
    """One token-accounting increment, as upstream makes per model call.

    On the first accounted call, a model id reported by a real backend replaces
    the row's `model` (so `hermes-agent` set at create becomes the live model).
    """
    row = conn.execute("SELECT model, api_call_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
    model = row["model"]
    if reported_model and not row["api_call_count"] and model != reported_model:
        conn.execute("UPDATE sessions SET model = ? WHERE id = ?", (reported_model, session_id))
        model = reported_model
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
              usage.cache_write_tokens, usage.reasoning_tokens)
    conn.execute(
        "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,"
        " cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,"
        " reasoning_tokens = reasoning_tokens + ?, estimated_cost_usd = COALESCE(estimated_cost_usd, 0.0),"
        " cost_status = 'unknown', cost_source = 'none',"
        " api_call_count = COALESCE(api_call_count, 0) + ? WHERE id = ?",
        (*counts, usage.api_calls, session_id),
    )
    conn.execute(
        "INSERT INTO session_model_usage (session_id, model, api_call_count, input_tokens, output_tokens,"
        " cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_status, cost_source, first_seen, last_seen)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'unknown', 'none', ?, ?)"
        " ON CONFLICT(session_id, model, billing_provider, billing_base_url, billing_mode, task) DO UPDATE SET"
        " api_call_count = api_call_count + excluded.api_call_count,"
        " input_tokens = input_tokens + excluded.input_tokens,"
        " output_tokens = output_tokens + excluded.output_tokens,"
        " cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,"
        " cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,"
        " reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,"
        " last_seen = excluded.last_seen",
        (session_id, model or "unknown", usage.api_calls, *counts, now, now),
    )


def finish_turn(
    conn: sqlite3.Connection,
    session_id: str,
    messages: list[dict[str, Any]],
    usage: Usage | None,
    *,
    model: str,
    reported_model: str | None,
    now: float,
) -> None:
    """Step 2 of a turn: the agent's assistant/tool rows, then the token accounting
    (none for a stopped turn, `usage` None: its model call never completed)."""
    _upsert_session(conn, session_id, model, now)
    for msg in messages:
        if msg.get("role") not in ("assistant", "tool"):
            continue
        append_message(
            conn, session_id, msg["role"], msg.get("content"), now,
            **{key: msg.get(key) for key in _MESSAGE_FIELDS},
        )
    if usage is not None:
        _account(conn, session_id, usage, reported_model, now)
