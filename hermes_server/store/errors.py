"""Storage-level outcomes that the HTTP layer maps to envelopes (in http/errors.py)."""

from __future__ import annotations


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
