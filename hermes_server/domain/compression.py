"""Compression rotation policy (`--compress-after-messages N`, off by default).

Real Hermes compresses a long context by closing the session with
`compression` and continuing in a child row, so the effective session id
changes in the middle of a turn. hermes-server reproduces the visible part of
that: when a turn would push the path session's active transcript past N
messages, the turn is written to a continuation child that starts with a short
summary message. The store does the writes (`store/turns.py`); this module
holds the pure rules.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

# A turn adds at least the user row and the final assistant row.
TURN_MESSAGES = 2


def needs_rotation(active_messages: int, limit: int | None) -> bool:
    """True when a turn on a non-empty transcript would take it past `limit` messages."""
    return limit is not None and active_messages > 0 and active_messages + TURN_MESSAGES > limit


def continuation_id(now: float, hex6: Callable[[], str] | None = None) -> str:
    """Upstream's continuation id form: `YYYYMMDD_HHMMSS_<6 hex>` (local time)."""
    suffix = hex6() if hex6 else uuid.uuid4().hex[:6]
    return time.strftime("%Y%m%d_%H%M%S", time.localtime(now)) + "_" + suffix


def summary_text(parent_id: str, compacted: int) -> str:
    """The content of the continuation's first message (role `assistant`)."""
    return (
        f"[CONTEXT SUMMARY]: {compacted} earlier messages of session {parent_id} were compacted "
        "by hermes-server. Treat them as background only; respond to the latest user message below."
    )
