"""A kept run's status is in runs_idempotency.db as soon as its server holds it (write-through, as
upstream's synchronous `_set_run_status`), so another process reading the file never finds an older
status than a client of the owner has seen; 0.21.6's shutdown claim follows the same rule
(https://github.com/NousResearch/hermes-agent/pull/114774)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from hermes_server.chat.runs import Runs
from hermes_server.domain.run_keys import SHUTDOWN_ERROR
from hermes_server.store.runs_idempotency import Owner, RunKeyStore


class _Clock:
    def now(self) -> float:
        return 1000.0


def _on_file(path: Path) -> dict[str, object]:
    with sqlite3.connect(path) as conn:  # another reader, as a second server process is
        (status_json,) = conn.execute("SELECT status_json FROM run_idempotency").fetchone()
    conn.close()
    return dict(json.loads(status_json))


def test_every_status_the_server_holds_is_already_in_the_file(tmp_path: Path) -> None:
    async def main() -> None:
        store = RunKeyStore(tmp_path / "runs_idempotency.db")
        runs = Runs(_Clock(), store)
        try:
            runs.register("run_1", "s", "m")
            outcome, _ = await store.reserve("scope", "key", "fp", "run_1", dict(runs.statuses["run_1"]),
                                             Owner.this_process(), 1000.0)
            assert outcome == "created"
            runs.kept.add("run_1")
            for status in ("running", "waiting_for_approval", "running"):
                runs.set_status("run_1", status)
                assert _on_file(store.path)["status"] == status  # no await in between
            runs.set_status("run_1", "running", output="partial")
            assert _on_file(store.path)["output"] == "partial"
            runs.interrupt_for_shutdown()
            on_file = _on_file(store.path)
            assert (on_file["status"], on_file["error"], on_file["last_event"]) == (
                "interrupted", SHUTDOWN_ERROR, "run.interrupted")
        finally:
            await store.close()

    asyncio.run(main())
