"""The client-safe projections of session rows and message rows.

Only allowlisted keys leave the server; `system_prompt` and `model_config` are
reduced to `has_system_prompt` / `has_model_config`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_server.domain.session_flags import (
    PATCHABLE_0_19,
    PATCHABLE_WITH_FLAGS,
    SHOWN_FLAGS,
    flag_changes,
    has_more,
)

SESSION_KEYS = (
    "id", "source", "user_id", "model", "title", "started_at", "ended_at",
    "end_reason", "message_count", "tool_call_count", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd",
    "api_call_count", "parent_session_id", "last_active", "preview",
    "_lineage_root_id",
)

MESSAGE_KEYS = (
    "id", "session_id", "role", "content", "tool_call_id", "tool_calls",
    "tool_name", "timestamp", "token_count", "finish_reason", "reasoning",
    "reasoning_content",
)

# Structured message content is stored as NUL + "json:" + JSON text.
CONTENT_JSON_PREFIX = "\x00json:"


def session_projection(row: Mapping[str, Any], *, flags: bool = False) -> dict[str, Any]:
    """Allowlisted keys present in `row`, in order, then (0.20.4's session flags, `flags`) the
    flag columns the row has, as booleans (a NULL reads false, as `bool(None)`), then the two
    `has_*` flags. A plain loop: a list page projects fifty rows on the event loop, and a helper
    returning a dict to merge cost it twice as much."""
    payload = {key: row[key] for key in SESSION_KEYS if key in row}
    if flags:
        for key in SHOWN_FLAGS:
            if key in row:
                payload[key] = bool(row[key])
    payload["has_system_prompt"] = bool(row.get("system_prompt"))
    payload["has_model_config"] = bool(row.get("model_config"))
    return payload


@dataclass(frozen=True)
class SessionShape:
    """How a release shows a session and what its PATCH takes: 0.19.0's, or with 0.20.4's flags
    (`flags`, domain/session_flags.py). Chosen once, when the app is built."""

    flags: bool = False

    def project(self, row: Mapping[str, Any]) -> dict[str, Any]:
        return session_projection(row, flags=self.flags)

    @property
    def patchable(self) -> frozenset[str]:
        """The fields a PATCH may name (any other is a 400 `unsupported_session_field`)."""
        return PATCHABLE_WITH_FLAGS if self.flags else PATCHABLE_0_19

    def changes(self, body: Mapping[str, Any]) -> dict[str, bool]:
        """The flags a PATCH body sets (NotABoolean for one that is not a JSON boolean)."""
        return flag_changes(body) if self.flags else {}

    def has_more(self, rows: Sequence[Mapping[str, Any]], limit: int) -> bool:
        """Whether a list page has a next one (0.20.4 counts only unpinned rows: back-filled pins are
        no next page)."""
        return has_more(rows, limit) if self.flags else len(rows) == limit


PLAIN_SESSIONS = SessionShape()
FLAGGED_SESSIONS = SessionShape(flags=True)


def decode_content(content: Any) -> Any:
    """Undo the structured-content sentinel; unparsable text is returned raw."""
    if isinstance(content, str) and content.startswith(CONTENT_JSON_PREFIX):
        try:
            return json.loads(content[len(CONTENT_JSON_PREFIX):])
        except ValueError:
            return content
    return content


def encode_content(content: Any) -> Any:
    """Store lists and dicts behind the sentinel; scalars as they are."""
    if isinstance(content, (list, dict)):
        return CONTENT_JSON_PREFIX + json.dumps(content)
    return content


def decode_tool_calls(raw: Any) -> Any:
    """Parse stored tool_calls JSON; unparsable text becomes `[]`, empty stays as is."""
    if not raw:
        return raw
    try:
        return json.loads(raw)
    except (ValueError, TypeError):
        return []


def message_projection(row: Mapping[str, Any], *, sparse: bool = False) -> dict[str, Any]:
    """The 12-key message object; `sparse` keeps only keys present (SSE run.completed)."""
    if sparse:
        return {key: row[key] for key in MESSAGE_KEYS if key in row}
    return {key: row.get(key) for key in MESSAGE_KEYS}
