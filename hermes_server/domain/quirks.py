"""Which of hermes-server's deliberate deviations from 0.19.0 are switched off.

Each deviation listed in docs/differences.md is one field here, consulted at the one
place where that deviation is decided. `serve --upstream-quirks` switches every one
off, so a team can see the failures 0.19.0 itself gives (its text/plain 500s among
them) before relying on hermes-server's structured answers.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Quirks:
    """True: answer as 0.19.0 does; False (the default): hermes-server's documented deviation."""

    # D8 "jobs bad input": malformed JSON, wrong types, bad schedules on /api/jobs answer
    # 500 with the Python exception text (default: 400, same envelope and text).
    jobs_bad_input_500: bool = False

    @classmethod
    def upstream(cls, enabled: bool) -> Quirks:
        """Every switch on when `enabled`, else the defaults."""
        return cls(**{field.name: enabled for field in fields(cls)}) if enabled else cls()


DEFAULT_QUIRKS = Quirks()
