"""Whether HERMES_HOME can hold state.db, and saying so in the log once per change.

state.db is opened on first use (as upstream), so a home that cannot hold it — a file,
a directory nobody may write, a path under /proc — would otherwise show only as 503s.
The server probes the home at start and whenever readiness is asked before state.db
exists, and every failed open reports here: the log names the problem when it appears
and again when it changes or goes away, and readiness reports its class.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
from pathlib import Path

log = logging.getLogger("hermes_server.store")


def probe(home: Path) -> OSError | None:
    """Create HERMES_HOME if needed and a scratch file in it (removed at once); the error, or None.

    Creates no state.db: a probe must not initialise the database a first request would.
    """
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=".hermes-server-probe-", dir=home)
        os.close(fd)
        os.unlink(scratch)
    except OSError as exc:
        return exc
    return None


def present(path: Path) -> bool:
    """Whether `path` exists, False when it cannot even be looked at (a home of mode 700 owned by
    another user): the callers then probe the home, which names that problem."""
    try:
        return path.exists()
    except OSError:
        return False


def in_the_way(home: Path) -> Path | None:
    """The file that stands where HERMES_HOME or one of its parents must be a directory, if any."""
    for candidate in (home, *home.parents):
        if present(candidate) or candidate.is_symlink():
            return None if candidate.is_dir() else candidate
    return None


def plainly(exc: BaseException, home: Path) -> str:
    """What is wrong, in words: "<path> is a file, not a directory" rather than `File exists`
    (what mkdir says of a file in the way), else the error's own text."""
    if isinstance(exc, (FileExistsError, NotADirectoryError)) and (found := in_the_way(home)) is not None:
        return f"{found} is a file, not a directory"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


class HomeProblems:
    """The current reason state.db cannot be opened (None when it can), logged when it changes."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.reason: str | None = None
        self._said: tuple[str, str] | None = None

    def failed(self, exc: BaseException) -> None:
        """Note why opening failed: `exc` is the OSError or sqlite3.Error underneath."""
        self.reason = type(exc).__name__
        text = plainly(exc, self.db_path.parent)
        said = (self.reason, text)
        if said != self._said:
            self._said = said
            log.warning("state.db cannot be opened at %s: %s (%s); every session route answers 503 until it can: "
                        "point HERMES_HOME (--home) at a writable directory", self.db_path, text, self.reason,
                        extra={"fields": {"db_path": str(self.db_path), "reason": self.reason}})

    def open_failed(self, exc: BaseException) -> None:
        """Opening state.db failed with `exc`; while no state.db exists the home's own problem is the
        reason (SQLite says only "unable to open database file"), so it reads the same as the probe's."""
        found = probe(self.db_path.parent) if not present(self.db_path) else None
        self.failed(found or exc)

    def opened(self) -> None:
        if self._said is not None:
            log.warning("state.db at %s opens again; sessions are served", self.db_path)
        self.reason = None
        self._said = None

    def check(self) -> str | None:
        """Probe the home (while state.db does not exist yet); the reason class, or None."""
        problem = probe(self.db_path.parent)
        if problem is None:
            self.opened()
            return None
        self.failed(problem)
        return self.reason


def cause(exc: BaseException) -> BaseException:
    """The OSError or sqlite3.Error behind a DatabaseUnavailable (itself when there is none)."""
    inner = exc.__cause__
    return inner if isinstance(inner, (OSError, sqlite3.Error)) else exc
