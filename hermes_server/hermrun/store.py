"""herm-run.db: the herm.run dialect's own SQLite file in HERMES_HOME, never state.db.

It goes through the same `Database` machinery as state.db (one writer thread, group
commit, reader pool, WAL), with its own schema, created on first use. Each operation
is one function run in one transaction; the rules it applies (rules.py) raise typed
errors inside it, so a refused request writes nothing: no session, no allowance.

The next deterministic id number lives in the file too, so ids continue after a
restart, and a number whose id is already stored (a fixture may use one) is skipped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes_server.domain.errors import SchemaMismatch
from hermes_server.hermrun.errors import NotFound
from hermes_server.hermrun.requests import CreateRequest, ListQuery, UpdateRequest
from hermes_server.hermrun.rules import (
    ARCHIVED,
    IDLE,
    STATUSES,
    Agent,
    Allowance,
    Version,
    Window,
    check_inactive,
    check_role,
    default_agent,
    resolve_version,
    session_id,
    take_conversation,
)
from hermes_server.store.db import Database, DatabaseFactory, fetch_dicts, loop_read

FILE_NAME = "herm-run.db"
SCHEMA_VERSION = 1
TABLES = ("meta", "agents", "agent_versions", "agent_tags", "sessions", "allowance")

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value);
CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    production TEXT NOT NULL,
    conversations INTEGER,
    window_seconds REAL
);
CREATE TABLE agent_versions (
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    position INTEGER NOT NULL,
    roles TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (agent_id, id)
);
CREATE TABLE agent_tags (
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    version_id TEXT NOT NULL,
    PRIMARY KEY (agent_id, name)
);
CREATE TABLE sessions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    agent_id TEXT NOT NULL,
    agent_version TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in STATUSES)})),
    role TEXT,
    title TEXT,
    yolo_mode INTEGER NOT NULL DEFAULT 0,
    preview INTEGER NOT NULL DEFAULT 0,
    tag TEXT,
    metadata TEXT NOT NULL DEFAULT '{{}}',
    usage TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX sessions_newest ON sessions(created_at DESC, seq DESC);
CREATE INDEX sessions_subject ON sessions(agent_id, subject_id);
CREATE TABLE allowance (
    agent_id TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    window_start REAL NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (agent_id, subject_id)
);
PRAGMA user_version = {SCHEMA_VERSION};
"""

SESSION_COLUMNS = (
    "id", "agent_id", "agent_version", "subject_id", "status", "role", "title", "yolo_mode", "preview", "tag",
    "metadata", "usage", "created_at", "updated_at",
)
_NEXT_NUMBER = "next_session_number"
_ALLOWANCE = "allowance"


def prepare(conn: sqlite3.Connection, path: Path) -> None:
    """Create the schema in a new (table-less) file; refuse, untouched, a file that is not ours."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript("BEGIN IMMEDIATE;\n" + _SCHEMA + "\nCOMMIT;")
        return
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA_VERSION or not set(TABLES) <= tables:
        raise SchemaMismatch(
            f"{path} is not a herm-run.db of this hermes-server (schema version {version}, "
            f"expected {SCHEMA_VERSION}); move it away to start afresh. The file was not changed.")
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")


# -- SQL shared with fixture loading --------------------------------------------


def agents_declared(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM agents LIMIT 1").fetchone() is not None


def find_agent(conn: sqlite3.Connection, agent_id: str) -> Agent | None:
    """The declared agent, the default one when none is declared, or None."""
    row = conn.execute("SELECT production, conversations, window_seconds FROM agents WHERE id = ?",
                       (agent_id,)).fetchone()
    if row is None:
        return None if agents_declared(conn) else default_agent(agent_id)
    versions = tuple(Version(r[0], tuple(json.loads(r[1]))) for r in conn.execute(
        "SELECT id, roles FROM agent_versions WHERE agent_id = ? ORDER BY position", (agent_id,)))
    tags = dict(conn.execute("SELECT name, version_id FROM agent_tags WHERE agent_id = ?", (agent_id,)).fetchall())
    allowance = None if row[1] is None else Allowance(row[1], row[2])
    return Agent(agent_id, versions, row[0], tags, allowance)


def put_agent(conn: sqlite3.Connection, agent: Agent) -> None:
    """Store `agent`, replacing any earlier definition of the same id (its sessions stay)."""
    conn.execute("DELETE FROM agents WHERE id = ?", (agent.id,))
    allowance = agent.allowance
    conn.execute("INSERT INTO agents (id, production, conversations, window_seconds) VALUES (?, ?, ?, ?)",
                 (agent.id, agent.production, allowance and allowance.conversations,
                  allowance and allowance.window_seconds))
    conn.executemany("INSERT INTO agent_versions (agent_id, id, position, roles) VALUES (?, ?, ?, ?)",
                     [(agent.id, v.id, i, json.dumps(list(v.roles))) for i, v in enumerate(agent.versions)])
    conn.executemany("INSERT INTO agent_tags (agent_id, name, version_id) VALUES (?, ?, ?)",
                     [(agent.id, name, target) for name, target in agent.tags.items()])


def put_allowance(conn: sqlite3.Connection, allowance: Allowance) -> None:
    """The allowance of every agent without its own (overrides the server's setting)."""
    value = json.dumps([allowance.conversations, allowance.window_seconds])
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_ALLOWANCE, value))


def insert_session(conn: sqlite3.Connection, columns: dict[str, Any]) -> None:
    """One session row (`columns` as SESSION_COLUMNS, metadata and usage as Python values)."""
    values = {**columns, "metadata": json.dumps(columns.get("metadata") or {}),
              "usage": None if columns.get("usage") is None else json.dumps(columns["usage"])}
    conn.execute(f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) VALUES ({', '.join('?' * len(SESSION_COLUMNS))})",
                 [values.get(name) for name in SESSION_COLUMNS])


def stored_session_ids(conn: sqlite3.Connection, ids: Iterable[str]) -> set[str]:
    ids = list(ids)
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        found.update(r[0] for r in conn.execute(
            f"SELECT id FROM sessions WHERE id IN ({', '.join('?' * len(chunk))})", chunk))
    return found


def clear(conn: sqlite3.Connection) -> None:
    """Empty every table: no agents, sessions, allowance use or settings; ids start again at 1."""
    for table in reversed(TABLES):
        conn.execute(f"DELETE FROM {table}")


def session_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]


# -- one transaction per operation ------------------------------------------------


@loop_read
def _row(conn: sqlite3.Connection, sid: str) -> dict[str, Any] | None:
    rows = fetch_dicts(conn, f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE id = ?", (sid,))
    return rows[0] if rows else None


def _existing(conn: sqlite3.Connection, sid: str) -> dict[str, Any]:
    row = _row(conn, sid)
    if row is None:
        raise NotFound(f"session {sid!r} not found")
    return row


def _allowance(conn: sqlite3.Connection, agent: Agent, default: Allowance) -> Allowance:
    if agent.allowance is not None:
        return agent.allowance
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_ALLOWANCE,)).fetchone()
    return default if row is None else Allowance(*json.loads(row[0]))


def _take(conn: sqlite3.Connection, agent: Agent, subject_id: str, now: float, default: Allowance) -> None:
    row = conn.execute("SELECT window_start, used FROM allowance WHERE agent_id = ? AND subject_id = ?",
                       (agent.id, subject_id)).fetchone()
    window = take_conversation(now, None if row is None else Window(row[0], row[1]), _allowance(conn, agent, default))
    conn.execute("INSERT OR REPLACE INTO allowance (agent_id, subject_id, window_start, used) VALUES (?, ?, ?, ?)",
                 (agent.id, subject_id, window.start, window.used))


def _new_id(conn: sqlite3.Connection, deterministic: bool) -> str:
    """A session id no stored session has: the next number (deterministic) or random."""
    if not deterministic:
        while True:
            candidate = session_id(None)
            if not stored_session_ids(conn, [candidate]):
                return candidate
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_NEXT_NUMBER,)).fetchone()
    number = 1 if row is None else int(row[0])
    while stored_session_ids(conn, [session_id(number)]):
        number += 1
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_NEXT_NUMBER, number + 1))
    return session_id(number)


def _create(conn: sqlite3.Connection, request: CreateRequest, now: float, default: Allowance,
            deterministic: bool) -> dict[str, Any]:
    agent = find_agent(conn, request.agent_id)
    if agent is None:
        raise NotFound(f"agent {request.agent_id!r} not found", "agentId")
    version = resolve_version(agent, preview=request.preview, tag=request.tag)
    check_role(agent, version, request.role)
    _take(conn, agent, request.subject_id, now, default)
    sid = _new_id(conn, deterministic)
    insert_session(conn, {
        "id": sid, "agent_id": agent.id, "agent_version": version.id, "subject_id": request.subject_id,
        "status": IDLE, "role": request.role, "title": request.title, "yolo_mode": int(request.yolo_mode),
        "preview": int(request.preview), "tag": request.tag, "metadata": request.metadata,
        "created_at": now, "updated_at": now,
    })
    return _existing(conn, sid)


def _list(conn: sqlite3.Connection, query: ListQuery) -> tuple[list[dict[str, Any]], bool]:
    where, params = [], []
    for column, value in (("agent_id", query.agent_id), ("subject_id", query.subject_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if query.status is None:
        where.append("status != ?")
        params.append(ARCHIVED)
    else:
        where.append("status = ?")
        params.append(query.status)
    rows = fetch_dicts(
        conn, f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions WHERE {' AND '.join(where)} "
              "ORDER BY created_at DESC, seq DESC LIMIT ? OFFSET ?",
        (*params, query.limit + 1, query.sql_offset))
    return rows[:query.limit], len(rows) > query.limit


def _update(conn: sqlite3.Connection, sid: str, request: UpdateRequest, now: float) -> dict[str, Any]:
    _existing(conn, sid)
    changes: dict[str, Any] = {"updated_at": now}
    if request.title is not None:
        changes["title"] = request.title
    if request.yolo_mode is not None:
        changes["yolo_mode"] = int(request.yolo_mode)
    if request.metadata is not None:
        changes["metadata"] = json.dumps(dict(request.metadata))
    conn.execute(f"UPDATE sessions SET {', '.join(f'{k} = ?' for k in changes)} WHERE id = ?",
                 (*changes.values(), sid))
    return _existing(conn, sid)


def _archive(conn: sqlite3.Connection, sid: str, now: float) -> dict[str, Any]:
    row = _existing(conn, sid)
    if row["status"] == ARCHIVED:
        return row
    check_inactive(sid, row["status"], "archived")
    conn.execute("UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?", (ARCHIVED, now, sid))
    return _existing(conn, sid)


def _delete(conn: sqlite3.Connection, sid: str) -> None:
    row = _existing(conn, sid)
    check_inactive(sid, row["status"], "deleted")
    conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))


def _agent_exists(conn: sqlite3.Connection, agent_id: str) -> None:
    if find_agent(conn, agent_id) is None:
        raise NotFound(f"agent {agent_id!r} not found", "agentId")


def _set_state(conn: sqlite3.Connection, sid: str, status: str | None, usage: dict[str, Any] | None,
               now: float) -> dict[str, Any]:
    _existing(conn, sid)
    if status is not None:
        conn.execute("UPDATE sessions SET status = ? WHERE id = ?", (status, sid))
    if usage is not None:
        conn.execute("UPDATE sessions SET usage = ? WHERE id = ?", (json.dumps(usage), sid))
    conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, sid))
    return _existing(conn, sid)


class HermRunStore:
    """The herm.run operations over herm-run.db; opened on first use, like state.db."""

    def __init__(self, home: Path, make_db: DatabaseFactory = Database) -> None:
        # The composition root chooses write retries and the write gate, as for state.db.
        self.db = make_db(home / FILE_NAME, prepare=prepare, reader_threads=1)

    async def create(self, request: CreateRequest, now: float, default: Allowance,
                     deterministic: bool) -> dict[str, Any]:
        """A new idle session, after the agent, version, role and allowance checks pass."""
        return await self.db.write(_create, request, now, default, deterministic)

    async def list(self, query: ListQuery) -> tuple[list[dict[str, Any]], bool]:
        """One page, newest first, and whether more rows follow it."""
        return await self.db.read(_list, query)

    async def get(self, sid: str) -> dict[str, Any]:
        row = await self.db.read(_row, sid)
        if row is None:
            raise NotFound(f"session {sid!r} not found")
        return row

    async def update(self, sid: str, request: UpdateRequest, now: float) -> dict[str, Any]:
        return await self.db.write(_update, sid, request, now)

    async def archive(self, sid: str, now: float) -> dict[str, Any]:
        return await self.db.write(_archive, sid, now)

    async def delete(self, sid: str) -> None:
        await self.db.write(_delete, sid)

    async def check_agent(self, agent_id: str) -> None:
        """NotFound unless the agent is declared (or none is declared at all)."""
        await self.db.read(_agent_exists, agent_id)

    async def set_state(self, sid: str, now: float, *, status: str | None = None,
                        usage: dict[str, Any] | None = None) -> dict[str, Any]:
        """Test control: give a session any status (to reach the 409s) or a usage snapshot."""
        return await self.db.write(_set_state, sid, status, usage, now)

    async def reset(self) -> None:
        """Test control: empty herm-run.db (allowance use and the id counter included), as a
        fresh server finds it (a storage outage on it is its write gate's, reset on its own)."""
        await self.db.write(clear)

    async def close(self) -> None:
        await self.db.close()
