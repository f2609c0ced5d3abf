"""A stored herm.run session as the JSON object clients see (pure).

Request fields keep their camelCase names (`agentId`, `yoloMode`, `metadata`); the
usage snapshot uses snake_case throughout, as the one usage field herm.run names,
`context_max`, does. Times are ISO 8601 UTC strings with milliseconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

SESSION_OBJECT = "agent.session"
DELETED_OBJECT = "agent.session_deleted"
WARM_OBJECT = "sandbox.warm"

# Usage counters, in the order the snapshot lists them; then the cost and the context window.
USAGE_COUNTERS = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "total_tokens", "model_calls",
)
USAGE_KEYS = USAGE_COUNTERS + ("estimated_cost_usd", "context_max")

# What datetime can show: a test clock set beyond it is shown at the bound, never a 500.
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def iso_time(seconds: float) -> str:
    """`2030-01-01T00:00:00.000Z` for Unix seconds (clamped to years 1970 through 9999)."""
    if not math.isfinite(seconds):
        seconds = 0.0
    moment = datetime.fromtimestamp(min(max(seconds, 0.0), _LATEST), UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_object(row: Mapping[str, Any]) -> dict[str, Any]:
    """The `agent.session` object for one `sessions` row of herm-run.db."""
    return {
        "object": SESSION_OBJECT,
        "id": row["id"],
        "agentId": row["agent_id"],
        "agentVersion": row["agent_version"],
        "subjectId": row["subject_id"],
        "status": row["status"],
        "role": row["role"],
        "title": row["title"],
        "yoloMode": bool(row["yolo_mode"]),
        "preview": bool(row["preview"]),
        "tag": row["tag"],
        "metadata": json.loads(row["metadata"]),
        "usage": None if row["usage"] is None else json.loads(row["usage"]),
        "createdAt": iso_time(row["created_at"]),
        "updatedAt": iso_time(row["updated_at"]),
    }


def list_object(rows: Sequence[Mapping[str, Any]], limit: int, offset: int, has_more: bool) -> dict[str, Any]:
    """One page of sessions, newest first."""
    return {"object": "list", "data": [session_object(r) for r in rows], "limit": limit, "offset": offset,
            "hasMore": has_more}


def deleted_object(session_id: str) -> dict[str, Any]:
    return {"object": DELETED_OBJECT, "id": session_id, "deleted": True}


def warm_object(agent_id: str, subject_id: str) -> dict[str, Any]:
    """The 202 of a warm hint: always `warming`, whatever was asked before."""
    return {"object": WARM_OBJECT, "status": "warming", "reason": None, "agentId": agent_id, "subjectId": subject_id}


def usage_snapshot(values: Mapping[str, Any]) -> dict[str, Any]:
    """A complete usage object from the fields given: counters default to 0 (total_tokens to
    input + output), the cost to 0.0, context_max to null."""
    usage: dict[str, Any] = {key: int(values.get(key) or 0) for key in USAGE_COUNTERS}
    if values.get("total_tokens") is None:
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    usage["estimated_cost_usd"] = float(values.get("estimated_cost_usd") or 0.0)
    usage["context_max"] = values.get("context_max")
    return usage
