"""The typed outcomes that code below the HTTP edge raises.

Storage, the chat use cases and the fixture checks raise these; `api/errors.py`
maps each type to its envelope in one table, so no layer below the edge knows
what an HTTP answer looks like and no route converts an error itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class DatabaseUnavailable(Exception):
    """state.db cannot be opened right now; every route answers 503 until it can."""


class SchemaMismatch(DatabaseUnavailable):
    """state.db exists but is not at schema version 22; we refuse to touch it."""


class StorageFault(DatabaseUnavailable):
    """The storage under an open state.db refused an operation (full disk, read-only, I/O error).

    `reason` says what happened; `write` tells whether a write was refused (its
    transaction rolled back, so nothing of it was stored) or a read; `written` what
    earlier writes of the same request (a fork's first steps) did store.
    """

    def __init__(self, reason: str, *, write: bool = True, written: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.write = write
        self.written = written


class SessionGone(Exception):
    """A session a write depends on was deleted after the request found it (404)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class SessionExists(Exception):
    """The chosen id is taken (409)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class TitleConflict(Exception):
    """A title is held by another session; str() is the client message (400)."""


class AgentFailed(Exception):
    """The agent raised during a turn that a client waits for (a 500 envelope).

    `cause` is the agent's own exception; its text is shown to the client after
    redaction, as upstream shows it.
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class CompletionFailed(AgentFailed):
    """The agent raised during a non-streamed `/v1/chat/completions` turn (worded as upstream words it)."""


@dataclass(frozen=True)
class Problem:
    """One reason a document was rejected."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class DocumentError(ValueError):
    """A document (fixture, fault list, control request) was rejected whole.

    `problems` says where and why (at least one); `code` is the envelope's code,
    which names what kind of document it was.
    """

    def __init__(self, problems: Iterable[Problem], code: str = "invalid_fixture") -> None:
        self.problems = list(problems)
        self.code = code
        # Every problem, as `hermes-server seed` lists them: a client fixing its document by the
        # HTTP answer alone must not have to guess what "(and 3 more problems)" were.
        super().__init__("; ".join(map(str, self.problems or [Problem("$", "invalid document")])))

    @property
    def path(self) -> str:
        return self.problems[0].path if self.problems else "$"

    def report(self, subject: str) -> str:
        """Every problem, one per line, under a heading that says nothing was written."""
        return f"{subject} rejected, nothing written:\n" + "\n".join(f"  {p}" for p in self.problems)


class TooManyRuns(Exception):
    """The server runs as many agent turns as it allows at once (upstream's run cap)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"Too many concurrent runs (max {limit})")
        self.limit = limit
