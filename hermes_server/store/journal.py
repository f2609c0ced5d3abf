"""state.db's journal mode, set as each release sets it when it opens the file.

- 0.19.0 switches every state.db it opens to WAL (`ALWAYS_WAL`).
- From 0.20 (`Journal.CONFIGURED`, https://github.com/NousResearch/hermes-agent/pull/74485) the
  home's `config.yaml` decides: `database.journal_mode` is `wal` (the default; a missing file,
  section or PyYAML, or any other value, counts as `wal`) or `delete`. With `delete` a new
  state.db is created in DELETE mode and one in another mode is set to DELETE; one already in WAL
  stays WAL, as upstream never switches a WAL file back while other processes may hold it open.
- From 0.21 (`Journal.TOLD`, https://github.com/NousResearch/hermes-agent/pull/96439) the log says
  so, once per database and process: an ERROR when a configured `delete` finds the file in WAL,
  a WARNING when a file that held data in another mode is switched to WAL (the switch rewrites
  its header and outlives the process).

Upstream 0.20+ also keeps new files out of WAL when the SQLite library has the WAL-reset bug;
hermes-server does not (docs/differences.md, "Journal mode").
"""

from __future__ import annotations

import logging
import sqlite3
from enum import Flag, auto
from pathlib import Path

log = logging.getLogger("hermes_server.store")


class Journal(Flag):
    """How a release sets state.db's journal mode (the module docstring)."""

    CONFIGURED = auto()  # 0.20: `database.journal_mode` in config.yaml
    TOLD = auto()  # 0.21: the ERROR and the WARNING


ALWAYS_WAL = Journal(0)
MODES = ("wal", "delete")
_told: set[tuple[str, str]] = set()  # (what, database) already logged by this process


def configured_mode(home: Path) -> str:
    """`database.journal_mode` of `home/config.yaml`, as upstream's `resolve_journal_mode` reads it."""
    try:
        import yaml

        with (home / "config.yaml").open(encoding="utf-8") as handle:
            database = (yaml.safe_load(handle) or {}).get("database", {})
        raw = database.get("journal_mode", "wal") if isinstance(database, dict) else "wal"
    except Exception:  # noqa: BLE001 - as upstream: anything unreadable means the default
        return "wal"
    mode = raw.strip().lower() if isinstance(raw, str) else ""
    return mode if mode in MODES else "wal"


def _once(what: str, path: Path) -> bool:
    key = (what, str(path))
    if key in _told:
        return False
    _told.add(key)
    return True


def set_mode(conn: sqlite3.Connection, path: Path, journal: Journal, *, fresh: bool) -> str:
    """Set the journal mode of the freshly opened writer connection `conn` to `path`, before any
    write (`fresh`: the file holds nothing yet). Returns the mode it is in."""
    current = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    wanted = configured_mode(path.parent) if Journal.CONFIGURED in journal else "wal"
    if current == "wal":
        if wanted == "delete" and Journal.TOLD in journal and _once("delete_overridden", path):
            log.error("%s: database.journal_mode=delete is configured but the database is already in WAL mode; "
                      "keeping WAL (switching it back while another process may have it open can corrupt it). "
                      "To apply DELETE, stop every process using this database and switch it offline "
                      "(`hermes sessions set-journal-mode delete`, or PRAGMA journal_mode=DELETE).", path)
        return current
    if wanted == "delete":
        return str(conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]).lower()
    mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
    if mode == "wal" and not fresh and Journal.TOLD in journal and _once("switched", path):
        log.warning("%s: the journal mode was %s and has been switched to WAL; this rewrites the database "
                    "header and lasts after this process ends. To keep %s, set `database.journal_mode: "
                    "delete` in config.yaml.", path, current, current.upper())
    return mode
