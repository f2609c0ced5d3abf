"""Query-parameter rules of `GET /api/sessions` (they never produce an error)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_OFFSET = 1_000_000

_TRUE = {"1", "true", "yes", "on"}


def nonnegative_int(raw: str | None, default: int, maximum: int) -> int:
    """Python `int()` semantics (whitespace, `+`, `1_0`, Unicode digits); bad or negative → default."""
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        return default
    if value < 0:
        return default
    return min(value, maximum)


def request_bool(raw: str | None) -> bool:
    """`1/true/yes/on` (trimmed, any case) are true; everything else is false."""
    return raw is not None and raw.strip().lower() in _TRUE


@dataclass(frozen=True)
class ListQuery:
    """The effective list request."""

    limit: int = DEFAULT_LIMIT
    offset: int = 0
    source: str | None = None
    include_children: bool = False

    @classmethod
    def parse(cls, first: dict[str, str]) -> ListQuery:
        """Build from the first value of each query parameter."""
        return cls(
            limit=nonnegative_int(first.get("limit"), DEFAULT_LIMIT, MAX_LIMIT),
            offset=nonnegative_int(first.get("offset"), 0, MAX_OFFSET),
            source=first.get("source") or None,
            include_children=request_bool(first.get("include_children")),
        )
