"""response_store.db is upstream's: its own ResponseStore reads what hermes-server stored, and back.

Needs hermes-agent 0.19.0 (tests/support/upstream.py finds it: HERMES_UPSTREAM_VENV, which `make test`
sets, then .venv-upstream/ or the oracle's venv); skipped with the reason without one, failed under
`make test`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.server import start_server
from tests.support.upstream import upstream_bin

pytestmark = pytest.mark.interop

# Run by upstream's interpreter: dump the schema, read our entry, store one of its own.
UPSTREAM_SCRIPT = """
import json, sqlite3, sys
from gateway.platforms.api_server import ResponseStore
path, ours = sys.argv[1], sys.argv[2]
fresh = sys.argv[3]
ResponseStore(db_path=fresh).close()
schema = [list(r) for r in sqlite3.connect(fresh).execute("SELECT type, name, sql FROM sqlite_master ORDER BY name")]
store = ResponseStore(db_path=path)
entry = store.get(ours)
store.put("resp_" + "0" * 28, {"response": {"id": "resp_" + "0" * 28, "object": "response", "status": "completed",
          "created_at": 1, "model": "m", "output": [], "usage": {}},
          "conversation_history": [{"role": "user", "content": "from upstream"}, {"role": "assistant", "content": "ok"}],
          "instructions": "upstream instructions", "session_id": "upstream-session"})
store.set_conversation("shared", "resp_" + "0" * 28)
store.close()
print(json.dumps({"schema": schema, "entry": entry}))
"""


def test_upstream_reads_our_store_and_we_read_upstreams(tmp_path: Path) -> None:
    # HERMES_UPSTREAM_VENV (set by make test) first, as for every interop test: under make test a
    # missing venv fails instead of skipping.
    upstream_python = upstream_bin("python")
    server = start_server(tmp_path / "home")
    try:
        ours = server.client.post("/v1/responses", json={"input": "from hermes-server", "instructions": "brief"})
        response_id = ours.json()["id"]
        out = subprocess.run([str(upstream_python), "-c", UPSTREAM_SCRIPT, str(server.home / "response_store.db"),
                              response_id, str(tmp_path / "upstream.db")],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        seen = json.loads(out.stdout.strip().splitlines()[-1])
        ours_schema = subprocess.run(
            [str(upstream_python), "-c", "import json,sqlite3,sys; print(json.dumps([list(r) for r in sqlite3.connect("
             "sys.argv[1]).execute('SELECT type, name, sql FROM sqlite_master ORDER BY name')]))",
             str(server.home / "response_store.db")], capture_output=True, text=True, timeout=60)
        assert json.loads(ours_schema.stdout) == seen["schema"]
        entry = seen["entry"]
        assert entry["response"] == ours.json()
        assert entry["session_id"] == ours.headers["x-hermes-session-id"] and entry["instructions"] == "brief"
        assert entry["conversation_history"][0]["content"] == "from hermes-server"
        # hermes-server chains from what upstream stored: its history, session and instructions.
        chained = server.client.post("/v1/responses", json={"input": "next", "conversation": "shared"})
        assert chained.headers["x-hermes-session-id"] == "upstream-session"
        assert chained.json()["output"][-1]["content"][0]["text"] == "ECHO-REPLY to: next [n=3]"
    finally:
        server.stop()
