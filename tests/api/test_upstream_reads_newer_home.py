"""Real hermes-agent 0.19.0 reads and writes a home the 0.20.4 profile created and reconciled.

The 0.20.4 profile adds `sessions.pinned`, `hidden` and `last_read_at` (store/schema.py) and
keeps `schema_version` at 22 (docs/differences.md, "Storage across versions"). Upstream 0.19.0's
SessionDB runs `_init_schema` on that file (its reconcile finds nothing of its own missing, its
version ladder nothing to do), lists and reads the rows hermes-server wrote with their flags
set, and writes rows of its own, which the 0.20.4 profile then serves with the columns' defaults.
The venv comes from tests/support/upstream.py.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.support.newer_homes import schema_objects, version_of
from tests.support.server import clean_env, start_server
from tests.support.upstream import upstream_bin

pytestmark = pytest.mark.interop

UPSTREAM_SCRIPT = r"""
import json, os, sys
from pathlib import Path
home = Path(sys.argv[1])
os.environ["HERMES_HOME"] = str(home)
from hermes_state import SessionDB
db = SessionDB(db_path=home / "state.db")
out = {
    "session": {k: db.get_session("flagged")[k] for k in ("id", "title", "system_prompt", "pinned", "hidden")},
    "messages": [(m["role"], m["content"]) for m in db.get_messages("flagged")],
    "listed": [s["id"] for s in db.list_sessions_rich(limit=10, order_by_last_active=True)],
}
db.create_session("theirs", "cli", model="mock-model")
db.append_message("theirs", "user", "written by 0.19.0")
db.set_session_title("theirs", "their title")
db.close()
print(json.dumps(out))
"""


def test_real_0_19_0_reads_and_writes_a_0_20_4_home(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    srv = start_server(home, "--hermes-version", "0.20.4")
    try:
        c = srv.client
        assert c.post("/api/sessions", json={"id": "flagged", "title": "Flagged", "system_prompt": "sp"}).status_code == 201
        assert c.post("/api/sessions/flagged/chat", json={"message": "hello"}).status_code == 200
        assert c.patch("/api/sessions/flagged", json={"pinned": True, "hidden": True, "unread": True}).status_code == 200
        assert c.post("/api/sessions", json={"id": "plain"}).status_code == 201
    finally:
        srv.stop()
    before = schema_objects(home / "state.db")

    out = subprocess.run([str(upstream_bin("python")), "-c", UPSTREAM_SCRIPT, str(home)],
                         capture_output=True, text=True, timeout=120, env=clean_env())
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["session"] == {"id": "flagged", "title": "Flagged", "system_prompt": seen["session"]["system_prompt"],
                               "pinned": 1, "hidden": 1}
    assert seen["session"]["system_prompt"]  # the turn's prompt, stored inline as 0.19.0 stores it
    assert [role for role, _ in seen["messages"]] == ["user", "assistant"]
    assert {"flagged", "plain"} <= set(seen["listed"])  # 0.19.0 knows no `hidden`: it lists the row
    assert schema_objects(home / "state.db") == before  # 0.19.0 changed no schema object
    assert version_of(home / "state.db") == 22

    srv = start_server(home, "--hermes-version", "0.20.4")
    try:
        theirs = srv.client.get("/api/sessions/theirs").json()["session"]
        assert (theirs["title"], theirs["message_count"], theirs["pinned"], theirs["hidden"]) == (
            "their title", 1, False, False)
        listed = [row["id"] for row in srv.client.get("/api/sessions").json()["data"]]
        assert "theirs" in listed and "flagged" not in listed  # hidden, here
    finally:
        srv.stop()
    with sqlite3.connect(home / "state.db") as conn:
        assert conn.execute("SELECT last_read_at FROM sessions WHERE id = 'flagged'").fetchone() == (0.0,)
