"""The session model lock of 0.20+ (`POST /api/sessions/{id}/model`), as upstream's
`update_session_runtime_lock` writes it. Runs inside the transaction `Database.write` opened."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from hermes_server.store.schema import shape


def set_model_lock(conn: sqlite3.Connection, session_id: str, model: str, lock: dict[str, Any]) -> bool:
    """`model_config.browser_model_lock` merged in (other keys kept), `sessions.model` set, the
    stored system prompt cleared so the next turn rebuilds it (on a v25+ home also the
    `system_prompt_hash` pointing to it, as upstream clears both). False when the row is gone."""
    row = conn.execute("SELECT model_config FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return False
    try:
        config = json.loads(row[0]) if row[0] else {}
    except ValueError:
        config = {}
    if not isinstance(config, dict):
        config = {}
    config["browser_model_lock"] = lock
    hashed = ", system_prompt_hash = NULL" if shape(conn).prompt_store else ""
    conn.execute(f"UPDATE sessions SET model = ?, model_config = ?, system_prompt = NULL{hashed} WHERE id = ?",
                 (model, json.dumps(config), session_id))
    return True
