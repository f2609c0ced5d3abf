"""Which of hermes-server's deliberate deviations from 0.19.0 are switched off.

Each deviation listed in docs/differences.md is one field of `Quirks`. Where a deviation
is an answer, the code raises `Deviation` (hermes-server's answer, and the switch that
would restore 0.19.0's) and the error table, composed once in app.py, picks one of the
two; where it is behaviour (which ids create accepts, which session /messages reads),
the one function deciding it consults the field. `serve --upstream-quirks` switches
every one off, so a team can see the failures 0.19.0 itself gives (its text/plain 500s
among them) before relying on hermes-server's structured answers.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

# What 0.19.0 answers instead: its bare text/plain 500, or the 400 "Invalid JSON in request body".
UpstreamAnswer = Literal["crash", "invalid_json"]


@dataclass(frozen=True)
class Quirks:
    """True: answer as 0.19.0 does; False (the default): hermes-server's documented deviation."""

    # D1: a create title over 100 characters is a text/plain 500 (default: 400 invalid_title).
    title_too_long_500: bool = False
    # D2: /messages follows the newest untagged child of any kind, so a fork takes over its source.
    fork_takes_over_messages: bool = False
    # D3: create accepts ids with control characters other than CR, LF, NUL.
    lax_create_ids: bool = False
    # D4: a chunked body over the limit is 400 "Invalid JSON in request body" (default: 413).
    chunked_over_limit_400: bool = False
    # D5: a bearer token that is not UTF-8 is a text/plain 500 (default: 401).
    undecodable_bearer_500: bool = False
    # D5: an exception inside the agent during /chat is a text/plain 500 (default: the envelope).
    agent_failure_500: bool = False
    # D6: input 0.19.0 crashes on (lone surrogates, non-object completion bodies …) is a text/plain 500;
    # a Responses instruction that is not text fails the turn, as in 0.19.0 (default: 400 before it).
    bad_input_500: bool = False
    # D7: a write the storage refuses (full disk, read-only, I/O error) is a text/plain 500 (default: 503).
    storage_failure_500: bool = False
    # D8 "jobs bad input": /api/jobs input 0.19.0 fails on is its JSON 500 (default: 400, same body).
    jobs_bad_input_500: bool = False
    # D9: the Responses API stores the first user message twice, and every chained turn repeats the chain.
    duplicated_response_history: bool = False

    @classmethod
    def upstream(cls, enabled: bool) -> Quirks:
        """Every switch on when `enabled`, else the defaults."""
        return cls(**{field.name: enabled for field in fields(cls)}) if enabled else cls()


DEFAULT_QUIRKS = Quirks()


class Deviation(Exception):
    """hermes-server's answer (`error`, rendered as usual) where 0.19.0 answers `upstream`;
    `quirk` names the `Quirks` field that restores 0.19.0's answer."""

    def __init__(self, quirk: str, error: Exception, upstream: UpstreamAnswer = "crash") -> None:
        super().__init__(str(error))
        assert quirk in {field.name for field in fields(Quirks)}, quirk
        self.quirk = quirk
        self.error = error
        self.upstream = upstream
