"""HERMES_HOMEs as Hermes 0.20 (schema v25) and 0.21 (schema v30) leave them, with a few rows.

Each is hermes-server's own v22 schema plus a delta written from the schema sources the spec
cites (tests/fixtures/hermes_v25_delta.sql, hermes_v30_delta.sql), then rows inserted the way
those releases store them: a prompt deduplicated into `system_prompts` behind
`system_prompt_hash` (the inline column NULL), a `last_activity_at` heartbeat newer than the
session's newest message, and on v30 a hidden, a pinned and a cron session.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_server.store.migrate import schema_script

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VERSIONS = (25, 30)
T0 = 1_780_000_000.0
PROMPT = "You are the prompt a v25+ home keeps in system_prompts."

# (id, source, started_at, last_activity_at, system_prompt_hash, [(role, content, timestamp)])
ROWS: list[tuple[str, str, float, float | None, str | None, list[tuple[str, str, float]]]] = [
    ("deduped", "cli", T0, T0 + 500, "h-prompt", [("user", "remember the prompt", T0 + 10),
                                                  ("assistant", "kept", T0 + 11)]),
    ("quiet", "cli", T0 + 1, None, "h-prompt", []),  # deduped too, and never chatted on here
    ("plain", "api_server", T0 + 100, None, None, [("user", "no heartbeat here", T0 + 200)]),
    ("cron-run", "cron", T0 - 50, None, None, [("user", "nightly", T0 - 40)]),
]
# v30 rows carrying the flags a 0.21 desktop sets.
FLAGGED = [("hidden-one", "hidden", T0 + 300), ("pinned-one", "pinned", T0 - 900)]


def build_home(home: Path, version: int) -> Path:
    """A HERMES_HOME whose state.db is at `version` (25 or 30); returns the state.db path."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript("BEGIN;\n" + schema_script() + "\n"
                           + (FIXTURES / f"hermes_v{version}_delta.sql").read_text(encoding="utf-8") + "\nCOMMIT;")
        conn.execute("BEGIN")
        conn.execute("INSERT INTO system_prompts (hash, prompt) VALUES ('h-prompt', ?)", (PROMPT,))
        for session_id, source, started, activity, prompt_hash, messages in ROWS:
            conn.execute("INSERT INTO sessions (id, source, started_at, last_activity_at, system_prompt_hash, "
                         "message_count) VALUES (?, ?, ?, ?, ?, ?)",
                         (session_id, source, started, activity, prompt_hash, len(messages)))
            for role, content, timestamp in messages:
                conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                             (session_id, role, content, timestamp))
        if version >= 30:
            for session_id, flag, started in FLAGGED:
                conn.execute(f"INSERT INTO sessions (id, source, started_at, {flag}) VALUES (?, 'desktop', ?, 1)",
                             (session_id, started))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


def schema_objects(path: Path) -> dict[tuple[str, str], str]:
    """Every table, index, view and trigger (hermes-server's `hs_*` indexes aside) and its SQL."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'hs\\_%' ESCAPE '\\'")
        return {(kind, name): sql for kind, name, sql in rows}
    finally:
        conn.close()


def version_of(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])
    finally:
        conn.close()
