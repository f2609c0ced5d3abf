#!/usr/bin/env python3
"""Rows for `oracle_diff.py` that the HTTP API cannot create, written into one home by upstream's own
SessionDB: preview, multimodal and resolution edge cases. Runs under the oracle's Python (the
only one that can import `hermes_state`): `python oracle_seed.py HOME`.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any


def seed_extra(home: Path) -> None:
    """Runs under the oracle's Python: rows for preview, multimodal and resolution edge cases."""
    os.environ["HERMES_HOME"] = str(home)
    from hermes_state import SessionDB  # imported here: only importable in the oracle venv

    db = SessionDB(db_path=home / "state.db")

    def session(sid: str, *messages: tuple[str, Any], **kwargs: Any) -> None:
        db.create_session(sid, "api_server", model="mock-model", **kwargs)
        for role, content in messages:
            db.append_message(sid, role, content)
            time.sleep(0.002)

    try:
        session("xp-61", ("user", "b" * 61), ("assistant", "ok"))
        session("xp-pad", ("user", "   " + "a" * 70))
        session("xp-lines", ("user", "line1\nline2\r\nline3"))
        session("xp-empty", ("user", ""), ("user", "second"))
        session("xp-mm", ("user", [{"type": "text", "text": "look"},
                                   {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]))
        db.append_message("xp-mm", "assistant", "thinking done", reasoning="r", reasoning_content="rc",
                          token_count=5, finish_reason="tool_calls",
                          tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
        db.append_message("xp-mm", "tool", "  tool output  ", tool_call_id="c1", tool_name="f")
        dropped = db.append_message("xp-mm", "user", "dropped later")
        db.append_message("xp-mm", "assistant", "also dropped")
        db.rewind_to_message("xp-mm", dropped)
        session("xf-src", ("user", "fork me please"), ("assistant", "sure"))
        session("xo-src", ("user", "fork order"), ("assistant", "ok"))
        # Compression tips: a closed sibling with newer messages loses to an open one.
        session("xc-root", ("user", "xc root"))
        db.end_session("xc-root", "compression")
        session("xc-b", ("user", "xc open older"), parent_session_id="xc-root")
        session("xc-a", ("user", "xc closed newer"), parent_session_id="xc-root")
        db.end_session("xc-a", "ws_orphan_reap")
        # A child that itself continues (compression) wins over an open one with newer messages.
        session("xc2-root", ("user", "xc2 root"))
        db.end_session("xc2-root", "compression")
        session("xc2-a", ("user", "xc2 continues"), parent_session_id="xc2-root")
        db.end_session("xc2-a", "compression")
        session("xc2-a2", ("user", "xc2 deep tip"), parent_session_id="xc2-a")
        db.set_session_title("xc2-a2", "xc2 tip title")
        session("xc2-b", ("user", "xc2 open newer"), parent_session_id="xc2-root")
        # Only tool and branch-marked children: no continuation at all.
        session("xc3-root", ("user", "xc3 root"))
        db.end_session("xc3-root", "compression")
        db.create_session("xc3-t", "tool", parent_session_id="xc3-root")
        db.append_message("xc3-t", "user", "tool child")
        session("xc3-br", ("user", "branch marked"), parent_session_id="xc3-root",
                model_config={"_branched_from": "xc3-root"})
        # A child carrying someone else's delegate marker is still deleted with its parent.
        session("xd-p", ("user", "xd parent"))
        session("xd-c", ("user", "xd child"), parent_session_id="xd-p", model_config={"_delegate_from": "elsewhere"})
        session("xu-p", ("user", "parent q"))
        session("xu-u", ("user", "untagged child q"), parent_session_id="xu-p")
        db.end_session("xu-p", "client_closed")
    finally:
        db.close()
    # Rows no SessionDB method writes, to exercise the readers' fallbacks (own SQL).
    conn = sqlite3.connect(home / "state.db")
    with conn:
        now = time.time()
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('xr-raw', 'api_server', ?)", (now,))
        rows = [("user", None, None), ("assistant", "\x00json:{broken", "not json"), ("tool", 42, "[]"),
                ("user", "\x00json:\"text\"", '{"a": 1}'), ("assistant", "", "")]
        for i, (role, content, calls) in enumerate(rows):
            conn.execute("INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES ('xr-raw', ?, ?, ?, ?)",
                         (role, content, calls, now + i))
    conn.close()


if __name__ == "__main__":
    seed_extra(Path(sys.argv[1]))
