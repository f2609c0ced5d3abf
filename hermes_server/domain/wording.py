"""Counts in the lines a person reads: "1 session", "2 sessions", never "1 sessions"."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`number` and `noun`, the noun plural unless the number is exactly 1 (0 sessions, 1 message)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
