"""The generated API key, kept in HERMES_HOME so a restarted server answers the clients configured with it.

Without API_SERVER_KEY a key is generated once, written to HERMES_HOME/hermes-server.key
(mode 0600, created exclusively so two starts cannot write different keys) and read back
on every later start. A key given by flag or environment is never written anywhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hermes_server.domain.keys import generate_key, key_problem

KEY_FILE = "hermes-server.key"


class KeyFileError(Exception):
    """The key file exists but cannot be used; the message says what to do."""


@dataclass(frozen=True)
class StoredKey:
    key: str
    path: Path
    # True when this start generated it; False when it was read back.
    generated: bool
    # Why it could not be kept (then it lasts only as long as this process), or None.
    not_kept: str | None = None


def stored_key(home: Path) -> StoredKey:
    """The key kept in `home`, generating (and keeping) one when there is none."""
    path = home / KEY_FILE
    try:
        return StoredKey(_read(path), path, generated=False)
    except (FileNotFoundError, NotADirectoryError):  # none kept (or no home to keep one in)
        pass
    key = generate_key()
    try:
        home.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another start wrote it first: use that one
            return StoredKey(_read(path), path, generated=False)
    except OSError as exc:
        return StoredKey(key, path, generated=True, not_kept=exc.strerror or str(exc))
    with os.fdopen(fd, "w") as out:
        out.write(key + "\n")
    return StoredKey(key, path, generated=True)


def _read(path: Path) -> str:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyFileError(f"cannot read the kept API key {path}: {getattr(exc, 'strerror', None) or exc}; "
                           "fix its permissions, or delete it to generate a new key") from None
    problem = key_problem(key)
    if problem:
        raise KeyFileError(f"the kept API key {path} is unusable ({problem}); delete it to generate a new key, "
                           "or give one with --api-key / API_SERVER_KEY")
    return key
