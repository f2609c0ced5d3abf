"""0.20+'s steer on a real server: `POST /v1/runs/{run_id}/steer`, the `run.steered` event and
`pending_steer`. Source: /work/shared/spec/hermes-after-0.19.md §1.4 "/v1/runs family" ([M #85226];
[R V2, V4]; messages and check order from V3 `_handle_steer_run`, `_mark_run_event`, `_execute_run`),
§4 item 6. The echo and script agents take no step after their model call begins, so a steer
accepted mid-turn is never delivered to them: it is the run's `pending_steer` (docs/differences.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.runs import names, read_events, submit, wait_status
from tests.support.server import RunningServer, start_server, start_with_script

pytestmark = pytest.mark.in_process

SCRIPT = {"turns": [
    {"match": "slow", "steps": [{"delta": "part one"}, {"sleep": 1.5}, {"delta": " part two"}]},
    {"match": "approve", "steps": [
        {"tool": "terminal", "args": {"command": "rm -rf x"}, "preview": "rm -rf x",
         "approval": {"pattern_key": "rm"}, "result": "done"}], "reply": "ok"},
    {"reply": "plain answer"},
]}


@pytest.fixture(scope="module", params=["0.20.4", "0.21.2"])
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("steer") / "home", SCRIPT, "--hermes-version", request.param)
    yield srv
    srv.stop()


def _running(client: httpx.Client, text: str = "slow one") -> str:
    run_id = submit(client, {"input": text})
    assert wait_status(client, run_id, ("running",))["status"] == "running"
    time.sleep(0.2)  # inside the scripted sleep
    return run_id


def test_0_19_0_has_no_steer(tmp_path_factory: pytest.TempPathFactory) -> None:
    """§1.2: steer is new after 0.19.0 (V0's route table has none); its flag stays absent."""
    srv = start_with_script(tmp_path_factory.mktemp("old") / "home", SCRIPT)
    try:
        run_id = _running(srv.client)
        assert srv.client.post(f"/v1/runs/{run_id}/steer", json={"input": "x"}).status_code == 404
        assert "run_steer" not in srv.client.get("/v1/capabilities").json()["features"]
        wait_status(srv.client, run_id)
    finally:
        srv.stop()


def test_steer_is_accepted_and_rides_on_run_completed(newer: RunningServer) -> None:
    """§1.4 [M #85226; V3]: 200 `hermes.run.steer`, a `run.steered{accepted:true}` event, the status's
    `last_event`; two steers join with a newline (the agent's `steer`); undelivered text is
    `pending_steer` on `run.completed` and the status, after `output` and `usage`."""
    client = newer.client
    run_id = _running(client)
    answer = client.post(f"/v1/runs/{run_id}/steer", json={"input": "  be brief  "})
    assert answer.status_code == 200
    assert answer.json() == {"object": "hermes.run.steer", "run_id": run_id, "accepted": True}
    assert client.get(f"/v1/runs/{run_id}").json()["last_event"] == "run.steered"
    parts = [{"type": "text", "text": "and"}, {"type": "input_text", "text": "polite"}]
    assert client.post(f"/v1/runs/{run_id}/steer", json={"message": parts}).status_code == 200
    status = wait_status(client, run_id)
    assert status["status"] == "completed" and status["output"] == "part one part two"
    assert status["pending_steer"] == "be brief\nand\npolite"
    assert list(status)[-4:] == ["last_event", "output", "usage", "pending_steer"]  # keys keep first-set order
    _, events, _ = read_events(client, run_id)
    assert names(events) == ["message.delta", "run.steered", "run.steered", "message.delta",
                            "reasoning.available", "run.completed"]
    assert list(events[1]) == ["event", "run_id", "timestamp", "accepted"] and events[1]["accepted"] is True
    assert list(events[-1]) == ["event", "run_id", "timestamp", "output", "usage", "pending_steer"]
    assert events[-1]["pending_steer"] == "be brief\nand\npolite"


def test_a_run_never_steered_has_no_pending_steer(newer: RunningServer) -> None:
    """§1.4 V3 `_execute_run`: `pending_steer` only when there is undelivered text."""
    run_id = submit(newer.client, {"input": "hello"})
    assert "pending_steer" not in wait_status(newer.client, run_id)
    _, events, _ = read_events(newer.client, run_id)
    assert "pending_steer" not in events[-1]


@pytest.mark.parametrize("body", [{}, {"input": ""}, {"input": "   "}, {"text": None}, {"message": []},
                                  {"input": [{"type": "image_url", "image_url": {"url": "x"}}]}])
def test_blank_steer_is_400(newer: RunningServer, body: object) -> None:
    """§1.4 V3: 400 `invalid_steer_input`, its message verbatim."""
    run_id = _running(newer.client)
    answer = newer.client.post(f"/v1/runs/{run_id}/steer", json=body)
    newer.client.post(f"/v1/runs/{run_id}/stop")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_steer_input"
    assert error["message"] == "Missing non-empty steer text; expected 'input', 'message', or 'text'."


def test_body_errors(newer: RunningServer) -> None:
    """V3 reads the body with the shared JSON reader: upstream's 400s for bad JSON and non-objects."""
    run_id = _running(newer.client)
    bad = newer.client.post(f"/v1/runs/{run_id}/steer", content=b"{")
    listed = newer.client.post(f"/v1/runs/{run_id}/steer", json=["x"])
    newer.client.post(f"/v1/runs/{run_id}/stop")
    assert bad.status_code == 400 and listed.status_code == 400


@pytest.mark.parametrize("body", [b'{"input": 5}', b'{"input": {"a": 1}}', b'{"input": [[["deep"]]]}',
                                  b'{"text": true}', b'{"input": "\\ud800 x"}', b'{"message": [null, 3, {"type": "text"}]}'])
def test_odd_steer_values_never_5xx(newer: RunningServer, body: bytes) -> None:
    """Bad input never 5xx: odd values are flattened to text as upstream's `_normalize_chat_content`
    (a lone surrogate becomes U+FFFD)."""
    run_id = _running(newer.client)
    answer = newer.client.post(f"/v1/runs/{run_id}/steer", content=body, headers={"Content-Type": "application/json"})
    newer.client.post(f"/v1/runs/{run_id}/stop")
    assert answer.status_code in (200, 400), answer.text


def test_unknown_run_is_404(newer: RunningServer) -> None:
    """§1.4 V3: 404 `run_not_found` before the body is read."""
    answer = newer.client.post("/v1/runs/run_nope/steer", content=b"{")
    assert answer.status_code == 404
    assert answer.json()["error"] == {"message": "Run not found: run_nope", "type": "invalid_request_error",
                                      "param": None, "code": "run_not_found"}


def test_not_running_is_409(newer: RunningServer) -> None:
    """§1.4 V3: 409 `run_not_accepting_steer` when the status is not `running`: a finished run, a run
    waiting for an approval, and stop-then-steer; checked before the body."""
    client = newer.client
    message = "Run is not currently accepting steer input: {}"
    done = submit(client, {"input": "hello"})
    wait_status(client, done)
    waiting = submit(client, {"input": "approve it"})
    wait_status(client, waiting, ("waiting_for_approval",))
    stopped = _running(client)
    client.post(f"/v1/runs/{stopped}/stop")
    for run_id in (done, waiting, stopped):
        answer = client.post(f"/v1/runs/{run_id}/steer", content=b"{")
        assert answer.status_code == 409, run_id
        assert answer.json()["error"]["code"] == "run_not_accepting_steer"
        assert answer.json()["error"]["message"] == message.format(run_id)
    client.post(f"/v1/runs/{waiting}/stop")
    assert wait_status(client, stopped)["status"] == "cancelled"


def test_capability_and_endpoint(newer: RunningServer) -> None:
    """§1.3 capabilities [M #85226 "run_steer capability + endpoint metadata"; R V4]: true when served,
    its endpoint between approval and stop, and its OpenAPI operation."""
    caps = newer.client.get("/v1/capabilities").json()
    assert caps["features"]["run_steer"] is True
    assert caps["endpoints"]["run_steer"] == {"method": "POST", "path": "/v1/runs/{run_id}/steer"}
    order = list(caps["endpoints"])
    assert order.index("run_approval") < order.index("run_steer") < order.index("run_stop")
    doc = newer.client.get("/openapi.json").json()
    operation = doc["paths"]["/v1/runs/{run_id}/steer"]["post"]
    assert {"200", "400", "404", "409"} <= set(operation["responses"])
    assert "RunSteer" in doc["components"]["responses"] and "RunSteerRequest" in doc["components"]["schemas"]


def test_steer_needs_the_key(newer: RunningServer) -> None:
    """Auth first, with 0.20+'s 401 envelope (§1.3 [M #70169])."""
    answer = httpx.post(f"{newer.url}/v1/runs/run_nope/steer", json={"input": "x"})
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "gateway_auth_failed"


def test_a_stopped_steered_run_drops_its_pending_steer(newer: RunningServer) -> None:
    """V3 `_execute_run`: a cancelled run's terminal event carries no `pending_steer`."""
    client = newer.client
    run_id = _running(client)
    assert client.post(f"/v1/runs/{run_id}/steer", json={"text": "hurry"}).status_code == 200
    client.post(f"/v1/runs/{run_id}/stop")
    status = wait_status(client, run_id)
    assert status["status"] == "cancelled" and "pending_steer" not in status


def test_start_server_default_is_unchanged(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The 0.19.0 default lists no steer endpoint."""
    srv = start_server(tmp_path_factory.mktemp("plain") / "home")
    try:
        assert "run_steer" not in srv.client.get("/v1/capabilities").json()["endpoints"]
    finally:
        srv.stop()
