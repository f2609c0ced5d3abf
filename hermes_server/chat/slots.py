"""The cap on live agent work that upstream's agent routes share (`max_concurrent_runs`).

Every agent turn in flight counts (session chat and its stream, chat completions,
responses, and structured runs until their task ends, a stopped run included), but
only `/v1/runs`, `/v1/responses` and `/v1/chat/completions` refuse, each at its own
point of validation: a full server answers 429 with `Retry-After: 1`. A turn is
counted from the moment its task is spawned, which the routes do without awaiting
anything after this check, so a request never takes another's last slot.
"""

from __future__ import annotations

from hermes_server.chat.tasks import TurnTasks
from hermes_server.domain.errors import TooManyRuns


def check_capacity(limit: int, turns: TurnTasks) -> None:
    """Raise TooManyRuns when `limit` turns are live already (a limit of 0 means no cap)."""
    if limit > 0 and len(turns) >= limit:
        raise TooManyRuns(limit)
