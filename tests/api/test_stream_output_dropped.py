"""0.21.6 on a real server process: a client that dropped its session chat stream reads the reply
from the stream's run (https://github.com/NousResearch/hermes-agent/pull/112305); under 0.21.2 the
run's `completed` status has no `output`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.runs import wait_status
from tests.support.server import start_server

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("version", "kept"), [("0.21.6", True), ("0.21.2", False)])
def test_a_dropped_stream_leaves_its_reply_on_the_run(tmp_path: Path, version: str, kept: bool) -> None:
    server = start_server(tmp_path / "home", "--hermes-version", version, "--agent-delay", "1.5",
                          in_process=False)
    try:
        assert server.client.post("/api/sessions", json={"id": "dropped"}).status_code == 201
        raw = b""
        with server.client.stream("POST", "/api/sessions/dropped/chat/stream",
                                  json={"message": "are you there"}) as response:
            for chunk in response.iter_raw():  # up to the run's id, then the client goes away
                raw += chunk
                if b"event: run.started" in raw and raw.endswith(b"\n\n"):
                    break
        started = raw.split(b"event: run.started\n", 1)[1].split(b"\n\n", 1)[0]
        run_id = json.loads(started[len(b"data: "):])["run_id"]
        status = wait_status(server.client, run_id)
        assert (status["status"], status["last_event"]) == ("completed", "run.completed")
        reply = server.client.get("/api/sessions/dropped/messages").json()["data"][-1]["content"]
        assert status.get("output", "<none>") == (reply if kept else "<none>")
    finally:
        server.stop()
