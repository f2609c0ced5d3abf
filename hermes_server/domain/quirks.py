"""The names of hermes-server's deliberate deviations from 0.19.0, and the set switched off.

Each deviation listed in docs/differences.md is one member of `Quirk`; a `Quirks` value
is the set of them answering as 0.19.0 does. What each one changes (the error rows it
swaps, the behaviour it switches) is written down once, in `api/deviations.py`; the
code that decides a behaviour asks `Quirk.X in quirks`. `serve --upstream-quirks`
switches every one off, so a team can see the failures 0.19.0 itself gives (its
text/plain 500s among them) before relying on hermes-server's structured answers.

The set is plain data, chosen once when the app is built, so a version profile can
name its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Quirk(Enum):
    """One documented deviation; its value is its number in docs/differences.md."""

    TITLE_TOO_LONG_500 = "D1"
    FORK_TAKES_OVER_MESSAGES = "D2"
    LAX_CREATE_IDS = "D3"
    CHUNKED_OVER_LIMIT_400 = "D4"
    UNDECODABLE_BEARER_500 = "D5 bearer"
    AGENT_FAILURE_500 = "D5 agent"
    BAD_INPUT_500 = "D6"
    STORAGE_FAILURE_500 = "D7"
    JOBS_BAD_INPUT_500 = "D8"
    DUPLICATED_RESPONSE_HISTORY = "D9"
    NO_CONTENT_PART_EVENTS = "D10"
    HEAD_LIMITS_TEXT_400 = "D11"


@dataclass(frozen=True)
class Quirks:
    """The deviations that answer as 0.19.0 does; every other one is hermes-server's (the default)."""

    on: frozenset[Quirk] = frozenset()

    def __contains__(self, quirk: object) -> bool:
        return quirk in self.on

    @classmethod
    def of(cls, *quirks: Quirk) -> Quirks:
        return cls(frozenset(quirks))

    @classmethod
    def upstream(cls, enabled: bool) -> Quirks:
        """Every switch on when `enabled`, else the defaults."""
        return cls(frozenset(Quirk)) if enabled else cls()


DEFAULT_QUIRKS = Quirks()
