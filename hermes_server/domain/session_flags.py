"""Session flags (0.20.4 and up): what PATCH accepts, which a row shows, and `has_more`.

0.20.4's `_session_response` adds `pinned`, `archived` and `hidden` after `_lineage_root_id`,
each coerced from SQLite's 0/1 to a JSON boolean and, like every key, only when the row has
the column. Its PATCH allows `{title, end_reason, pinned, archived, hidden, unread}` and
refuses a flag that is not a JSON boolean with 400 `invalid_session_field` ("'pinned' must be
a boolean"); `unread` moves the read watermark (`set_session_read(read = not unread)`). Its
list back-fills pinned rows past `limit` and counts only unpinned rows against it for
`has_more` (V2 §B.1/B.2/B.5 of docs/versions.md's sources).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Shown on the session object, in upstream's order.
SHOWN_FLAGS = ("pinned", "archived", "hidden")
# Accepted by PATCH, in the order the handler applies (and checks) them.
PATCH_FLAGS = ("pinned", "archived", "hidden", "unread")

PATCHABLE_0_19 = frozenset({"title", "end_reason"})
PATCHABLE_WITH_FLAGS = PATCHABLE_0_19 | frozenset(PATCH_FLAGS)


class NotABoolean(ValueError):
    """A flag's value that is not a JSON boolean; the text is the 400's message."""

    def __init__(self, field: str) -> None:
        super().__init__(f"'{field}' must be a boolean")
        self.field = field


def flag_changes(body: Mapping[str, Any]) -> dict[str, bool]:
    """The flags a PATCH body sets, by name in PATCH_FLAGS order; NotABoolean for the first
    one that is not `true`/`false` (1, "true" and null are refused too)."""
    changes = {}
    for field in PATCH_FLAGS:
        if field in body:
            value = body[field]
            if not isinstance(value, bool):
                raise NotABoolean(field)
            changes[field] = value
    return changes


def has_more(rows: Sequence[Mapping[str, Any]], limit: int) -> bool:
    """Whether another page follows: the unpinned rows filled `limit` (back-filled pins do not count)."""
    return sum(1 for row in rows if not row.get("pinned")) == limit
