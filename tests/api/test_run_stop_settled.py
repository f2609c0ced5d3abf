"""0.21's stop on a real server: a finished run answers 200 with its status object. Source:
/work/shared/spec/hermes-after-0.19.md §1.4 "POST /v1/runs/{id}/stop (0.21, V3)" table, V3
`_handle_stop_run` [B for the branch, R V4 for the release]. 0.19.0 and 0.20.4 keep the 404."""

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
