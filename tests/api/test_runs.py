"""Structured runs over real sockets: submit, status, events, stop, approval, what a run stores."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.db import session_row, sql
from tests.support.runs import RUN_SCRIPT, names, read_events, submit, wait_status
from tests.support.server import RunningServer, start_server, start_with_script

pytestmark = pytest.mark.in_process

STATUS_KEYS = ["object", "run_id", "status", "updated_at", "created_at", "session_id", "model"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("runs") / "home", RUN_SCRIPT)
    yield srv
    srv.stop()


def test_submit_answers_202_and_the_run_completes(server: RunningServer) -> None:
    response = server.client.post("/v1/runs", json={"input": "hello"})
    assert response.status_code == 202
    body = response.json()
    assert list(body) == ["run_id", "status"] and body["status"] == "started"
    assert body["run_id"].startswith("run_") and len(body["run_id"]) == 36
    assert "x-hermes-session-id" not in response.headers
    status = wait_status(server.client, body["run_id"])
    assert list(status)[:7] == STATUS_KEYS
    assert status["object"] == "hermes.run" and status["status"] == "completed"
    assert status["session_id"] == body["run_id"] and status["model"] == "hermes-agent"
    assert status["output"] == "plain answer" and status["last_event"] == "run.completed"
    assert set(status["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}


def test_events_framing_and_a_late_first_subscriber_gets_everything(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "hello"})
    wait_status(server.client, run_id)
    response, events, comments = read_events(server.client, run_id)
    assert response.status_code == 200
    assert {k: v for k, v in response.headers.items() if k not in ("date", "server", "transfer-encoding")} == {
        "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no"}
    # As 0.19.0: the model call's text again as `reasoning.available` after its deltas.
    assert names(events) == ["message.delta", "message.delta", "reasoning.available", "run.completed"]
    assert [list(e) for e in events[:1]] == [["event", "run_id", "timestamp", "delta"]]
    assert list(events[-1]) == ["event", "run_id", "timestamp", "output", "usage"]
    assert "".join(e["delta"] for e in events[:2]) == "plain answer"
    assert events[2]["text"] == "plain answer"
    assert comments == ["stream closed"]


def test_the_queue_goes_with_its_subscriber_but_the_status_stays(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "hello"})
    read_events(server.client, run_id)
    began = time.monotonic()
    again = server.client.get(f"/v1/runs/{run_id}/events")
    assert again.status_code == 404 and time.monotonic() - began >= 0.9
    assert again.json() == {"error": {"message": f"Run not found: {run_id}", "type": "invalid_request_error",
                                      "param": None, "code": "run_not_found"}}
    assert server.client.get(f"/v1/runs/{run_id}").json()["status"] == "completed"


def test_unknown_ids(server: RunningServer) -> None:
    for method, path in (("GET", "/v1/runs/run_nope"), ("POST", "/v1/runs/run_nope/stop"),
                         ("POST", "/v1/runs/run_nope/approval"), ("GET", "/v1/runs/run_nope/events")):
        response = server.client.request(method, path, json={"choice": "once"})
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "run_not_found"


def test_what_a_run_stores(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "tool please", "session_id": "run-session"})
    assert wait_status(server.client, run_id)["status"] == "completed"
    session = server.client.get("/api/sessions/run-session").json()["session"]
    assert session["source"] == "api_server" and session["title"] is None
    rows = server.client.get("/api/sessions/run-session/messages").json()["data"]
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    # A second run on the same session appends; the model is not shown state.db's history.
    second = submit(server.client, {"input": "hello", "session_id": "run-session",
                                    "conversation_history": [{"role": "user", "content": "earlier"}]})
    assert wait_status(server.client, second)["status"] == "completed"
    rows = server.client.get("/api/sessions/run-session/messages").json()["data"]
    assert [r["role"] for r in rows][4:] == ["user", "assistant"]
    assert "earlier" not in [r["content"] for r in rows]


def test_tool_events(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "tool please"})
    wait_status(server.client, run_id)
    _, events, _ = read_events(server.client, run_id)
    started, completed = events[0], events[1]
    assert list(started) == ["event", "run_id", "timestamp", "tool", "preview"]
    assert started["tool"] == "search" and started["preview"] == "search x"
    assert list(completed) == ["event", "run_id", "timestamp", "tool", "duration", "error"]
    assert completed["event"] == "tool.completed" and completed["error"] is False


def test_a_failing_agent_fails_the_run(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "explode"})
    status = wait_status(server.client, run_id)
    assert status["status"] == "failed" and status["error"] == "backend exploded"
    assert list(status)[7:] == ["error", "last_event"]
    _, events, _ = read_events(server.client, run_id)
    assert events[-1]["event"] == "run.failed" and events[-1]["error"] == "backend exploded"


def test_stop_mid_turn_keeps_the_streamed_text(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "slow one"})
    time.sleep(0.4)
    stop = server.client.post(f"/v1/runs/{run_id}/stop")
    assert stop.status_code == 200 and stop.json() == {"run_id": run_id, "status": "stopping"}
    status = wait_status(server.client, run_id, timeout=3)
    assert status["status"] == "cancelled" and status["last_event"] == "run.cancelled"
    assert "output" not in status
    _, events, comments = read_events(server.client, run_id)
    assert names(events) == ["message.delta", "run.cancelled"] and comments == ["stream closed"]
    rows = server.client.get(f"/api/sessions/{run_id}/messages").json()["data"]
    assert [(r["role"], r["content"], r["finish_reason"]) for r in rows] == [
        ("user", "slow one", None), ("assistant", "part one", None)]
    row = session_row(server.db_path, run_id)
    assert (row["api_call_count"], row["input_tokens"], row["estimated_cost_usd"]) == (0, 0, None)
    # A finished run cannot be stopped (its status is still readable).
    assert server.client.post(f"/v1/runs/{run_id}/stop").status_code == 404


def test_approval_once_runs_the_tool(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "approve this"})
    status = wait_status(server.client, run_id, ("waiting_for_approval",))
    assert status["status"] == "waiting_for_approval" and status["last_event"] == "approval.request"
    answer = server.client.post(f"/v1/runs/{run_id}/approval", json={"choice": " Approve "})
    assert answer.status_code == 200
    assert answer.json() == {"object": "hermes.run.approval_response", "run_id": run_id, "choice": "once",
                             "resolved": 1}
    assert wait_status(server.client, run_id)["status"] == "completed"
    _, events, _ = read_events(server.client, run_id)
    assert names(events) == ["message.delta", "reasoning.available", "tool.started", "approval.request",
                             "approval.responded", "tool.completed", "reasoning.available", "run.completed"]
    request = events[3]
    assert list(request) == ["command", "pattern_key", "pattern_keys", "description", "allow_permanent",
                             "event", "run_id", "timestamp", "choices"]
    assert request["choices"] == ["once", "session", "always", "deny"]
    assert events[5]["error"] is False
    again = server.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "deny"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "approval_not_active"


def test_approval_deny_blocks_the_tool(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "approve this"})
    wait_status(server.client, run_id, ("waiting_for_approval",))
    assert server.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "deny", "all": "yes"}).status_code == 200
    assert wait_status(server.client, run_id)["status"] == "completed"
    _, events, _ = read_events(server.client, run_id)
    assert next(e for e in events if e["event"] == "tool.completed")["error"] is True
    tool_row = [r for r in server.client.get(f"/api/sessions/{run_id}/messages").json()["data"] if r["role"] == "tool"]
    assert "BLOCKED" in tool_row[0]["content"]


def test_stop_while_waiting_denies_then_cancels(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "approve this"})
    wait_status(server.client, run_id, ("waiting_for_approval",))
    assert server.client.post(f"/v1/runs/{run_id}/stop").status_code == 200
    assert wait_status(server.client, run_id)["status"] == "cancelled"
    _, events, _ = read_events(server.client, run_id)
    assert names(events)[-3:] == ["approval.request", "tool.completed", "run.cancelled"]
    assert events[-2]["error"] is True


@pytest.mark.parametrize("body, status, message", [
    ("{", 400, "Invalid JSON"),
    ({"choice": "maybe"}, 400, "Invalid approval choice; expected one of: once, session, always, deny"),
    ({}, 400, "Invalid approval choice; expected one of: once, session, always, deny"),
    (["deny"], 400, "Request body must be a JSON object"),
    ({"choice": "once"}, 409, "Run has no pending approval: {run}"),
])
def test_approval_errors(server: RunningServer, body: object, status: int, message: str) -> None:
    run_id = submit(server.client, {"input": "slow one"})
    content = body if isinstance(body, str) else None
    response = server.client.post(f"/v1/runs/{run_id}/approval", content=content,
                                  json=None if content else body)
    server.client.post(f"/v1/runs/{run_id}/stop")
    assert response.status_code == status
    assert response.json()["error"]["message"] == message.format(run=run_id)


@pytest.mark.parametrize("body, message, param", [
    ({}, "Missing 'input' field", None),
    ({"input": []}, "Missing 'input' field", None),
    ({"input": {"a": 1}}, "No user message found in input", None),
    ({"input": [{"role": "user", "content": ""}]}, "No user message found in input", None),
    ({"input": ["just a string"]}, "The last item of 'input' must be a message object", "input"),
    ({"input": "x", "conversation_history": "no"}, "'conversation_history' must be an array of message objects",
     None),
    ({"input": "x", "conversation_history": [{"role": "user"}]},
     "conversation_history[0] must have 'role' and 'content' fields", None),
    (["x"], "Request body must be a JSON object", None),
])
def test_bad_submissions(server: RunningServer, body: object, message: str, param: str | None) -> None:
    response = server.client.post("/v1/runs", json=body)
    assert response.status_code == 400
    assert response.json() == {"error": {"message": message, "type": "invalid_request_error", "param": param,
                                         "code": None}}


def test_invalid_json_and_auth(server: RunningServer) -> None:
    response = server.client.post("/v1/runs", content=b"{")
    assert response.json() == {"error": {"message": "Invalid JSON", "type": "invalid_request_error",
                                         "param": None, "code": None}}
    for method, path in (("POST", "/v1/runs"), ("GET", "/v1/runs/x"), ("GET", "/v1/runs/x/events"),
                         ("POST", "/v1/runs/x/stop"), ("POST", "/v1/runs/x/approval")):
        response = httpx.request(method, server.url + path, json={"input": "x"})
        assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_api_key"


def test_session_key_header(server: RunningServer, tmp_path: Path) -> None:
    response = server.client.post("/v1/runs", json={"input": "x"}, headers={"X-Hermes-Session-Key": "scope-a"})
    assert response.status_code == 202 and response.headers["x-hermes-session-key"] == "scope-a"
    assert server.client.post("/v1/runs", json={"input": "x"},
                              headers={"X-Hermes-Session-Key": "k" * 257}).json() == {
        "error": {"message": "Session key too long", "type": "invalid_request_error"}}
    open_server = start_server(tmp_path / "open", key=None)
    try:
        refused = open_server.client.post("/v1/runs", json={"input": "x"}, headers={"X-Hermes-Session-Key": "a"})
        assert refused.status_code == 403
    finally:
        open_server.stop()


def test_previous_response_id_continues_the_stored_chain(server: RunningServer) -> None:
    first = server.client.post("/v1/responses", json={"input": "remember me"})
    stored = first.json()["id"]
    run_id = submit(server.client, {"input": "and now?", "previous_response_id": stored})
    status = wait_status(server.client, run_id)
    assert status["session_id"] == first.headers["x-hermes-session-id"]
    # Unknown ids are ignored, as upstream ignores them.
    assert wait_status(server.client, submit(server.client, {"input": "x", "previous_response_id": "resp_nope"}))[
        "status"] == "completed"


def test_health_counts_live_runs(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": "slow one"})
    time.sleep(0.2)
    queues = server.client.get("/health/detailed").json()["readiness"]["checks"]["background_queues"]
    server.client.post(f"/v1/runs/{run_id}/stop")
    assert queues["active_api_runs"] >= 1


def test_deterministic_ids_repeat(tmp_path: Path) -> None:
    seen = []
    for name in ("a", "b"):
        srv = start_server(tmp_path / name, "--deterministic")
        try:
            run_id = submit(srv.client, {"input": "x"})
            wait_status(srv.client, run_id)
            seen.append((run_id, srv.client.post("/v1/responses", json={"input": "x"}).json()["id"]))
        finally:
            srv.stop()
    assert seen[0] == seen[1]
    assert sql(tmp_path / "a" / "state.db", "SELECT COUNT(*) FROM sessions WHERE id = ?", seen[0][0]) == [(1,)]


def test_two_subscribers_split_one_queue(tmp_path: Path) -> None:
    srv = start_with_script(tmp_path / "home", {"turns": [{"steps": [
        {"delta": f" w{i}"} if i % 2 else {"sleep": 0.1} for i in range(20)]}]}, "--keepalive-seconds", "0.3")
    try:
        run_id = submit(srv.client, {"input": "x"})
        got: dict[int, bytes] = {}

        def subscribe(slot: int) -> None:
            with httpx.Client(base_url=srv.url, headers=srv.client.headers, timeout=10) as client:
                try:
                    with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
                        got[slot] = b""
                        for chunk in response.iter_raw():
                            got[slot] += chunk
                            if b"stream closed" in got[slot] or got[slot].count(b": keepalive") >= 2:
                                return
                except httpx.HTTPError:
                    pass

        workers = [threading.Thread(target=subscribe, args=(slot,)) for slot in (0, 1)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(15)
        assert wait_status(srv.client, run_id)["status"] == "completed"
        closed = [slot for slot, raw in got.items() if b": stream closed" in raw]
        assert len(closed) == 1  # one subscriber got the end; the other only keepalives after its share
        other = got[1 - closed[0]]
        assert b": keepalive" in other
        deltas = sum(raw.count(b'"message.delta"') for raw in got.values())
        assert deltas == 10  # every event went to exactly one of them
    finally:
        srv.stop()


def test_the_event_stream_never_has_cors_headers(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "home", "--cors-origins", "http://app.example")
    try:
        origin = {"Origin": "http://app.example"}
        submitted = srv.client.post("/v1/runs", json={"input": "x"}, headers=origin)
        assert submitted.headers["access-control-allow-origin"] == "http://app.example"
        run_id = submitted.json()["run_id"]
        with srv.client.stream("GET", f"/v1/runs/{run_id}/events", headers=origin) as response:
            response.read()
        assert "access-control-allow-origin" not in response.headers
        with srv.client.stream("POST", "/v1/responses", json={"input": "x", "stream": True}, headers=origin) as streamed:
            streamed.read()
        assert streamed.headers["access-control-allow-origin"] == "http://app.example"
    finally:
        srv.stop()
