"""Message paging of `GET /api/sessions/{id}/messages` (0.20.4; docs/versions.md).

0.19.0 returns the whole transcript. 0.20.4 returns one page: `limit` (500 when omitted,
never more than 500), `offset`, and `order` (`latest` when `limit` is omitted, else
`oldest`). With `latest` the offset counts back from the newest message; the page is
chronological either way. Unlike the session list's parameters, bad values are a 400.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

MAX_LIMIT = 500
ORDERS = ("oldest", "latest")
BAD_NUMBERS = "limit and offset must be non-negative integers"
BAD_ORDER = "order must be one of: oldest, latest"

T = TypeVar("T")


class BadPagination(ValueError):
    """A paging parameter 0.20.4 refuses; the message is upstream's."""


def _count(raw: str | None, default: int) -> int:
    """Python `int()` semantics (whitespace, `+`, `1_0`); anything else, or negative, is refused."""
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadPagination(BAD_NUMBERS) from None
    if value < 0:
        raise BadPagination(BAD_NUMBERS)
    return value


@dataclass(frozen=True)
class Page:
    """The effective page request."""

    limit: int = MAX_LIMIT
    offset: int = 0
    order: str = "latest"

    @classmethod
    def parse(cls, first: dict[str, str]) -> Page:
        """Build from the first value of each query parameter; the order is checked first, as
        upstream does. An empty `order=` counts as omitted (docs/differences.md)."""
        raw_limit = first.get("limit")
        order = (first.get("order") or ("latest" if raw_limit is None else "oldest")).strip().lower()
        if order not in ORDERS:
            raise BadPagination(BAD_ORDER)
        limit = min(_count(raw_limit, MAX_LIMIT), MAX_LIMIT)
        return cls(limit, _count(first.get("offset"), 0), order)

    def select(self, rows: list[T]) -> list[T]:
        """This page of `rows` (chronological), in chronological order."""
        if self.order == "oldest":
            return rows[self.offset:self.offset + self.limit]
        end = max(len(rows) - self.offset, 0)
        return rows[max(end - self.limit, 0):end]

    def block(self, returned: int) -> dict[str, Any]:
        """The response's `pagination` object."""
        return {"limit": self.limit, "offset": self.offset, "order": self.order, "returned": returned}


# What a release reads of the messages query: the page asked for, a refusal (answered after the
# 404 check, as upstream orders them), or None for the whole transcript.
PageRequest = Page | BadPagination | None


def whole_transcript(first: dict[str, str]) -> PageRequest:
    """0.19.0: no paging; the parameters are ignored."""
    return None


def requested_page(first: dict[str, str]) -> PageRequest:
    """0.20.4: the page the query asks for, or its refusal."""
    try:
        return Page.parse(first)
    except BadPagination as refused:
        return refused
