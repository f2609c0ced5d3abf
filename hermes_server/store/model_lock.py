"""The session model lock of 0.20+ (`POST /api/sessions/{id}/model`), as upstream's
`update_session_runtime_lock` writes it. Runs inside the transaction `Database.write` opened."""

from __future__ import annotations

import json
import sqlite3
from typing import Any


def set_model_lock(conn: sqlite3.Connection, session_id: str, model: str, lock: dict[str, Any]) -> bool:
    """`model_config.browser_model_lock` merged in (other keys kept), `sessions.model` set, the
    stored system prompt cleared so the next turn rebuilds it. False when the row is gone."""
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
    conn.execute("UPDATE sessions SET model = ?, model_config = ?, system_prompt = NULL WHERE id = ?",
                 (model, json.dumps(config), session_id))
    return True
