"""The generated API key, kept in HERMES_HOME so a restarted server answers the clients configured with it.

Without API_SERVER_KEY a key is generated once, written to HERMES_HOME/hermes-server.key
(mode 0600, created exclusively so two starts cannot write different keys) and read back
on every later start. The file appears whole or not at all (written aside, then linked to
its name), so a start killed while keeping it, or a second start racing it, never finds
it empty. A key given by flag or environment is never written anywhere.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
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
    except KeyFileError:
        if os.access(home, os.X_OK) or not home.exists():
            raise
        # A home this process may not even look into: whether a key is kept there cannot be known, and
        # none can be kept; the server starts, reports itself not ready, and says why.
        return StoredKey(generate_key(), path, generated=True, not_kept="cannot enter the home")
    key = generate_key()
    try:
        home.mkdir(parents=True, exist_ok=True)
        try:
            _keep(path, key)
        except FileExistsError:  # another start kept one first: use that one
            return StoredKey(_read(path), path, generated=False)
    except OSError as exc:
        return StoredKey(key, path, generated=True, not_kept=exc.strerror or str(exc))
    return StoredKey(key, path, generated=True)


def _keep(path: Path, key: str) -> None:
    """Create `path` holding `key`, whole: the key is written and synced into a scratch file
    (mkstemp's mode 0600) that is then hard-linked to `path`, which fails with FileExistsError
    when the name exists. Writing into `path` itself left it empty for a moment, and a start
    killed then (or a second start reading then) refused every later start: "unusable (empty)".
    A filesystem without hard links gets the exclusive create-then-write instead."""
    fd, scratch = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(key + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(scratch, path)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some FUSE or FAT mounts)
            with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
                out.write(key + "\n")
    finally:
        with contextlib.suppress(OSError):  # the key is kept (or not) either way
            os.unlink(scratch)


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
