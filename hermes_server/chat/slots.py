"""The cap on live agent work that upstream's agent routes share (`max_concurrent_runs`).

Every agent turn in flight counts (session chat and its stream, chat completions,
responses, and structured runs until their task ends, a stopped run included), and so
does every request admitted to `/v1/runs`, `/v1/responses` or `/v1/chat/completions`
that is still reading its body or validating it: otherwise a burst of requests would all
pass the check before any of them had started its turn. Only those three routes refuse,
each at its own point of validation: a full server answers 429 with `Retry-After: 1`.
An admission ends when its turn's task is spawned (the routes spawn right after
releasing it, without awaiting anything between) or when the request fails.
"""

from __future__ import annotations

from hermes_server.chat.tasks import TurnTasks
from hermes_server.domain.errors import TooManyRuns


class Admission:
    """One admitted agent request, counted until its turn is handed to a task."""

    def __init__(self, slots: Slots) -> None:
        self.slots = slots
        self.active = True
        slots.admitted += 1

    def release(self) -> None:
        """Stop counting this request (idempotent): its turn is about to be spawned, or it failed."""
        if self.active:
            self.active = False
            self.slots.admitted -= 1

    def __enter__(self) -> Admission:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class Slots:
    """The cap of one server: its limit, the live turns and the admitted requests."""

    def __init__(self, limit: int, turns: TurnTasks) -> None:
        self.limit = limit
        self.turns = turns
        self.admitted = 0

    def admit(self) -> Admission:
        """Admit one agent request, or raise TooManyRuns when the cap is reached (0: no cap)."""
        if self.limit > 0 and len(self.turns) + self.admitted >= self.limit:
            raise TooManyRuns(self.limit)
        return Admission(self)
