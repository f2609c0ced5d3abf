"""Storage-level outcomes that the HTTP layer maps to envelopes (in http/errors.py)."""

from __future__ import annotations


class DatabaseUnavailable(Exception):
    """state.db cannot be opened right now; every route answers 503 until it can."""


class SchemaMismatch(DatabaseUnavailable):
    """state.db exists but is not at schema version 22; we refuse to touch it."""


class SessionExists(Exception):
    """The chosen id is taken (409)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class TitleConflict(Exception):
    """A title is held by another session; str() is the client message (400)."""
