"""Side files of a home that only their owner may read: response_store.db, runs_idempotency.db.

They hold conversations and run statuses, as state.db does, so they get the key file's mode
(0600), and so do the -wal and -shm SQLite made beside them before the mode was set.
"""

from __future__ import annotations

from pathlib import Path


def owner_only(path: Path) -> None:
    """Mode 0600 on `path` and its -wal/-shm where they exist; a filesystem without modes is let be."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if candidate.exists():
                candidate.chmod(0o600)
        except OSError:
            pass  # some mounts have no modes: the database still works
