"""What a release needs of state.db beyond 0.19.0's v22 tables, and what a file has.

Upstream adds columns declaratively: on every open its `_reconcile_columns` diffs the
columns `SCHEMA_SQL` declares against `PRAGMA table_info` and runs `ALTER TABLE … ADD
COLUMN` for each missing one; `schema_version` only gates data migrations. A unit of a
release whose behaviour stores into a column 0.19.0 lacks declares it (`Column`, in the
unit's module) as upstream's v30 `SCHEMA_SQL` (`hermes_state_common.py`) declares it, so the
columns hermes-server adds are the ones real Hermes 0.20+ adds (its reconcile then finds
them present), and real 0.19.0, which names every column it writes, never notices them.

Reads adapt to the file instead of the release alone: a home written by Hermes 0.20+
(schema v23–v30) has columns and tables 0.19.0 never had, a 0.19.0 home has none of them.
`Reading` is what the release asks for; `Shape` is what one file allows; a query uses only
what both say.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Column:
    """One column a profile stores into, declared as upstream declares it."""

    table: str
    name: str
    declaration: str

    @property
    def label(self) -> str:
        return f"{self.table}.{self.name}"

    def ddl(self) -> str:
        return f'ALTER TABLE "{self.table}" ADD COLUMN "{self.name}" {self.declaration}'


def _columns_of(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def missing_columns(conn: sqlite3.Connection, columns: Iterable[Column]) -> list[Column]:
    """The columns of `columns` the file's tables lack (a table it lacks entirely lacks them all)."""
    live: dict[str, set[str]] = {}
    missing = []
    for column in columns:
        if column.table not in live:
            live[column.table] = _columns_of(conn, column.table)
        if column.name not in live[column.table]:
            missing.append(column)
    return missing


def add_columns(conn: sqlite3.Connection, columns: Iterable[Column]) -> None:
    """`ALTER TABLE … ADD COLUMN` each one, inside the caller's transaction."""
    for column in columns:
        conn.execute(column.ddl())


@dataclass(frozen=True)
class Shape:
    """The optional columns and tables one state.db has (0.19.0's have none of them)."""

    session_columns: frozenset[str]
    tables: frozenset[str]

    @property
    def prompt_store(self) -> bool:
        """v25+: prompts deduplicated into `system_prompts`, rows pointing by `system_prompt_hash`."""
        return "system_prompt_hash" in self.session_columns and "system_prompts" in self.tables

    @property
    def activity_clock(self) -> bool:
        """v25+: `sessions.last_activity_at`, a heartbeat of activity besides messages."""
        return "last_activity_at" in self.session_columns

    @property
    def flags(self) -> bool:
        """The flag columns a list can filter on (`archived` is in every v22 file)."""
        return {"pinned", "hidden"} <= self.session_columns


# Shapes by connection, each valid for the schema cookie it was read under (at most _KEPT of them).
_SHAPES: dict[int, tuple[sqlite3.Connection, int, Shape]] = {}
_SHAPES_LOCK = threading.Lock()
_KEPT = 64


def shape(conn: sqlite3.Connection) -> Shape:
    """What this file has now. Another process may add columns at any time, so it is asked per
    read; SQLite's schema cookie (`PRAGMA schema_version`, moved by any schema change by anyone)
    says whether the answer read last time on this connection still holds."""
    cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
    kept = _SHAPES.get(id(conn))
    if kept is not None and kept[0] is conn and kept[1] == cookie:
        return kept[2]
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = Shape(frozenset(_columns_of(conn, "sessions")), frozenset(tables))
    with _SHAPES_LOCK:  # reader threads ask at the same time
        if len(_SHAPES) >= _KEPT:
            _SHAPES.pop(next(iter(_SHAPES)))
        _SHAPES[id(conn)] = (conn, cookie, found)
    return found


@dataclass(frozen=True)
class Reading:
    """Which of the newer columns a release's reads use, where the file has them."""

    prompt_store: bool = False
    activity_clock: bool = False
    flags: bool = False

    @property
    def plain(self) -> bool:
        """Nothing newer is asked for: 0.19.0's queries, untouched."""
        return not (self.prompt_store or self.activity_clock or self.flags)

    def __or__(self, other: Reading) -> Reading:
        """Everything either reading asks for (a release's units each name what their reads use)."""
        return Reading(prompt_store=self.prompt_store or other.prompt_store,
                       activity_clock=self.activity_clock or other.activity_clock,
                       flags=self.flags or other.flags)

    def on(self, conn: sqlite3.Connection) -> Reading:
        """This reading narrowed to what the file `conn` reads has (itself when nothing is asked)."""
        if self.plain:
            return self
        found = shape(conn)
        return replace(self, prompt_store=self.prompt_store and found.prompt_store,
                       activity_clock=self.activity_clock and found.activity_clock,
                       flags=self.flags and found.flags)


PLAIN = Reading()
