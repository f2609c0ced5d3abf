"""0.21's run answers on a real server: stop on a finished run answers 200 with its status object
(/work/shared/spec/hermes-after-0.19.md §1.4 "POST /v1/runs/{id}/stop (0.21, V3)" table, V3
`_handle_stop_run` [B]; 0.19.0 and 0.20.4 keep the 404), and the submit answer's `replayed: false`
(§1.4 "POST /v1/runs with durable Idempotency-Key": "(V4 live)" [R])."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.runs import submit, wait_status
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process


@pytest.fixture(scope="module", params=["0.19.0", "0.20.4", "0.21.2"])
def served(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, str]]:
    srv = start_server(tmp_path_factory.mktemp("stop") / "home", "--hermes-version", request.param)
    yield srv, request.param
    srv.stop()


def test_stop_on_a_finished_run(served: tuple[RunningServer, str]) -> None:
    """0.21: 200 with the status object (as GET /v1/runs/{id} answers it); before: 404 `run_not_found`."""
    server, version = served
    run_id = submit(server.client, {"input": "hello"})
    status = wait_status(server.client, run_id)
    assert status["status"] == "completed"
    answer = server.client.post(f"/v1/runs/{run_id}/stop")
    if version == "0.21.2":
        assert answer.status_code == 200 and answer.json() == status
        assert server.client.get(f"/v1/runs/{run_id}").json() == status  # the stop changed nothing
    else:
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "run_not_found"


def test_stop_on_an_unknown_run_is_404_in_every_profile(served: tuple[RunningServer, str]) -> None:
    server, _ = served
    answer = server.client.post("/v1/runs/run_nope/stop")
    assert answer.status_code == 404
    assert answer.json()["error"]["message"] == "Run not found: run_nope"


def test_submit_answer(served: tuple[RunningServer, str]) -> None:
    """0.21.2: `{"run_id", "status": "started", "replayed": false}` [R V4 live]; before: no `replayed`."""
    server, version = served
    answer = server.client.post("/v1/runs", json={"input": "hello"})
    assert answer.status_code == 202
    body = answer.json()
    expected = ["run_id", "status", "replayed"] if version == "0.21.2" else ["run_id", "status"]
    assert list(body) == expected and body["status"] == "started"
    assert body.get("replayed", False) is False
    assert "idempotency-replayed" not in answer.headers
    wait_status(server.client, body["run_id"])
    schema = server.client.get("/openapi.json").json()["components"]["schemas"]["RunStarted"]
    assert sorted(schema["properties"]) == sorted(expected)
