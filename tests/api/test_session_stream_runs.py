"""0.20+: a session stream's `run_id` is a run (status, stop and steer reach it); and 0.21.2's
routes hermes-server does not serve (their 401, then 501). From 0.21.4 (0.21.6 here) a completed
stream run's status keeps the reply as `output`, a failed or cancelled one's does not
(https://github.com/NousResearch/hermes-agent/pull/112305).

Sources: /work/shared/spec/hermes-after-0.19.md §1.4 "POST /api/sessions/{id}/chat/stream (changed)":
"The stream registers its run_id in the run registry (#85226). GET /v1/runs/{run_id}, /stop and
/steer therefore work on session-stream runs" [R V2 §B.10, M #85226]; `pending_steer` on
`run.completed` [R V2 §B.10]. A stopped stream's `assistant.completed{completed:false,
interrupted:true}` then `run.cancelled` is [B V6, #111770] (docs/versions.md). §1.2 route table
V4 (0.21.2) [R] for the browser-control, artifact and room-member routes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.runs import RUN_SCRIPT, wait_status
from tests.support.server import RunningServer, start_server, start_with_script
from tests.support.sse import events, parse_frames

pytestmark = pytest.mark.in_process


@pytest.fixture(scope="module", params=["0.20.4", "0.21.2", "0.21.6"])
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("stream-runs") / "home", RUN_SCRIPT, "--hermes-version",
                            request.param)
    yield srv
    srv.stop()


def _keeps_output(server: RunningServer) -> bool:
    """Whether the release keeps a completed stream run's reply (0.21.4 on)."""
    return bool(server.client.get("/health").json()["version"] == "0.21.6")


def _session(server: RunningServer, session_id: str) -> None:
    assert server.client.post("/api/sessions", json={"id": session_id}).status_code == 201


class LiveStream:
    """A session stream read as it comes: its run id from `run.started`, the rest on `finish`."""

    def __init__(self, server: RunningServer, session_id: str, text: str) -> None:
        self.context = server.client.stream("POST", f"/api/sessions/{session_id}/chat/stream",
                                            json={"message": text})
        self.response = self.context.__enter__()
        self.chunks = self.response.iter_raw()
        self.raw = b""
        while b"event: run.started" not in self.raw or not self.raw.endswith(b"\n\n"):
            self.raw += next(self.chunks)
        started = parse_frames(self.raw[:self.raw.index(b"\n\n") + 2])[0]
        assert started.name == "run.started" and started.data is not None
        self.run_id: str = started.data["run_id"]

    def finish(self) -> list[tuple[str, dict[str, Any]]]:
        self.raw += b"".join(self.chunks)
        self.context.__exit__(None, None, None)
        return events(parse_frames(self.raw))


def test_status_of_a_stream_run(newer: RunningServer) -> None:
    _session(newer, f"st-{newer.port}")
    stream = LiveStream(newer, f"st-{newer.port}", "hello")
    done = stream.finish()
    assert [name for name, _ in done][-2:] == ["run.completed", "done"]
    status = wait_status(newer.client, stream.run_id)
    assert status["status"] == "completed" and status["last_event"] == "run.completed"
    assert status["session_id"] == f"st-{newer.port}" and status["object"] == "hermes.run"
    # https://github.com/NousResearch/hermes-agent/pull/112305: the reply, for a client that lost the stream
    assert status.get("output", "<none>") == ("plain answer" if _keeps_output(newer) else "<none>")
    assert newer.client.post(f"/v1/runs/{stream.run_id}/steer", json={"input": "late"}).status_code == 409


def test_steer_then_stop_a_stream_run(newer: RunningServer) -> None:
    session_id = f"slow-{newer.port}"
    _session(newer, session_id)
    stream = LiveStream(newer, session_id, "slow one")
    assert newer.client.get(f"/v1/runs/{stream.run_id}").json()["status"] == "running"
    steer = newer.client.post(f"/v1/runs/{stream.run_id}/steer", json={"input": "be brief"})
    assert steer.status_code == 200
    assert steer.json() == {"object": "hermes.run.steer", "run_id": stream.run_id, "accepted": True}
    stop = newer.client.post(f"/v1/runs/{stream.run_id}/stop")
    assert stop.json() == {"run_id": stream.run_id, "status": "stopping"}
    done = stream.finish()
    assert [name for name, _ in done][-3:] == ["assistant.completed", "run.cancelled", "done"]
    completed = dict(done)["assistant.completed"]
    assert (completed["completed"], completed["partial"], completed["interrupted"]) == (False, True, True)
    assert completed["content"] == "part one"
    cancelled = wait_status(newer.client, stream.run_id)
    assert cancelled["status"] == "cancelled" and "output" not in cancelled
    # Its events went to the stream: the run has no /events queue of its own.
    assert newer.client.get(f"/v1/runs/{stream.run_id}/events").status_code == 404


def test_a_failed_stream_run_keeps_no_output(newer: RunningServer) -> None:
    session_id = f"fail-{newer.port}"
    _session(newer, session_id)
    stream = LiveStream(newer, session_id, "explode")
    stream.finish()
    status = wait_status(newer.client, stream.run_id)
    assert status["status"] == "failed" and status["last_event"] == "run.failed"
    assert "output" not in status


def test_pending_steer_rides_on_run_completed(tmp_path_factory: pytest.TempPathFactory) -> None:
    script = {"turns": [{"steps": [{"delta": "a"}, {"sleep": 0.6}, {"delta": "b"}]}]}
    srv = start_with_script(tmp_path_factory.mktemp("pending") / "home", script, "--hermes-version", "0.20.4")
    try:
        _session(srv, "p")
        stream = LiveStream(srv, "p", "hello")
        assert srv.client.post(f"/v1/runs/{stream.run_id}/steer", json={"text": "shorter"}).status_code == 200
        completed = dict(stream.finish())["run.completed"]
        assert completed["pending_steer"] == "shorter"
        assert list(completed).index("pending_steer") == list(completed).index("runtime") + 1
        assert wait_status(srv.client, stream.run_id)["pending_steer"] == "shorter"
    finally:
        srv.stop()


def test_0_19_0_stream_runs_are_not_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    srv = start_server(tmp_path_factory.mktemp("old") / "home")
    try:
        _session(srv, "s")
        with srv.client.stream("POST", "/api/sessions/s/chat/stream", json={"message": "hi"}) as response:
            raw = b"".join(response.iter_raw())
        run_id = json.loads(raw.split(b"\n\n")[0].split(b"data: ", 1)[1])["run_id"]
        assert srv.client.get(f"/v1/runs/{run_id}").status_code == 404
    finally:
        srv.stop()


UNSERVED = [("POST", "/v1/browser-control/register"), ("GET", "/v1/browser-control/ws"),
            ("POST", "/v1/artifacts/upload"), ("GET", "/v1/artifacts/download/art_1"),
            ("POST", "/v1/room-members/invitations"), ("GET", "/v1/room-members/capabilities"),
            ("POST", "/v1/room-members/grants/refresh"), ("POST", "/v1/room-members/grants/revoke")]


@pytest.mark.parametrize(("method", "path"), UNSERVED)
def test_unserved_0_21_routes_answer_401_then_501(newer: RunningServer, method: str, path: str) -> None:
    keyless = httpx.request(method, newer.url + path, timeout=10)
    version = newer.client.get("/health").json()["version"]
    if version == "0.20.4":
        assert keyless.status_code == 404  # 0.20.4's table has none of them
        return
    assert keyless.status_code == 401 and keyless.json()["error"]["code"] == "gateway_auth_failed"
    answer = newer.client.request(method, path)
    assert answer.status_code == 501
    assert answer.json() == {"error": {
        "message": f"{method} {path} is a Hermes {version} route that hermes-server does not serve "
                   "(see docs/differences.md)", "type": "server_error", "param": None, "code": "not_implemented"}}
    document = newer.client.get("/openapi.json").json()
    template = path.replace("art_1", "{artifact_id}")
    assert "501" in document["paths"][template][method.lower()]["responses"]
    advertised = [entry for entry in newer.client.get("/v1/capabilities").json()["endpoints"].values()
                  if entry["path"] == template]
    # 0.21.2 lists the browser and artifact routes (tests/api/test_capabilities_profiles.py), no room route.
    assert advertised == ([] if "/room-members/" in path else [{"method": method, "path": template}])
