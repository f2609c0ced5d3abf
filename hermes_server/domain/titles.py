"""Title sanitising and lineage numbering (`X`, `X #2`, `X #3`, …), and the lone-surrogate rule.

Lone UTF-16 surrogates (from a `\\ud800` JSON escape) are the one text SQLite cannot
store as UTF-8: titles and chat text get them replaced, as upstream's writers do;
ids and other stored fields are refused with a 400 instead of a 500 (D6).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_TITLE_LENGTH = 100

_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE_FORMAT = re.compile(r"[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufffc\ufff9-\ufffb]")
_WHITESPACE_RUN = re.compile(r"\s+")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NUMBERED = re.compile(r"^(.*?) #(\d+)$")
_TRAILING_NUMBER = re.compile(r"^.* #(\d+)$")


class TitleTooLong(ValueError):
    """Raised when a cleaned title exceeds the limit; str() is the client message."""


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate, which cannot be encoded as UTF-8."""
    return _SURROGATE.search(text) is not None


def scrub_surrogates(text: str) -> str:
    """Replace lone UTF-16 surrogates with U+FFFD, as upstream's writers do."""
    return _SURROGATE.sub("\ufffd", text)


def sanitize_title(title: str) -> str | None:
    """Clean a title the way upstream stores it; None means "no title".

    Removes ASCII controls (keeping TAB/LF/CR for the whitespace step) and invisible
    format characters, collapses whitespace runs to one space, trims, and enforces
    the 100-code-point limit on the result.
    """
    if not title:
        return None
    cleaned = _ASCII_CONTROLS.sub("", scrub_surrogates(title))
    cleaned = _INVISIBLE_FORMAT.sub("", cleaned)
    cleaned = _WHITESPACE_RUN.sub(" ", cleaned).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise TitleTooLong(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})")
    return cleaned


def lineage_base(title: str) -> str:
    """The title without a trailing ` #<digits>` (non-greedy prefix)."""
    match = _NUMBERED.match(title)
    return match.group(1) if match else title


def like_escape(text: str) -> str:
    """Escape `\\`, `%` and `_` for a LIKE pattern with ESCAPE '\\'."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def next_lineage_title(base: str, existing: Iterable[str]) -> str:
    """Next title in a lineage, given the titles that equal `base` or match `base #%`.

    With no match the base itself is free. Otherwise the highest trailing number
    (an unnumbered title counts as 1) plus one.
    """
    titles = list(existing)
    if not titles:
        return base
    highest = 1
    for title in titles:
        match = _TRAILING_NUMBER.match(title)
        if match:
            highest = max(highest, int(match.group(1)))
    return f"{base} #{highest + 1}"
