"""Faults, the journal and reset cover runs and responses by their route names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.runs import names, read_events, submit, wait_status
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process

TRANSPORT_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError)


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("runs-control") / "home", "--fixture-api", "--deterministic")
    yield server
    server.stop()


@pytest.fixture
def c(srv: RunningServer) -> httpx.Client:
    srv.client.post("/_fixture/reset", json={"to": "empty"})
    return srv.client


def install(c: httpx.Client, *faults: dict[str, Any]) -> None:
    assert c.put("/_fixture/faults", json={"faults": list(faults)}).status_code == 200


def test_status_fault_on_runs_starts_no_run(c: httpx.Client) -> None:
    install(c, {"route": "runs", "kind": "status", "status": 503})
    refused = c.post("/v1/runs", json={"input": "x"})
    assert refused.status_code == 503
    assert c.get("/health/detailed").json()["readiness"]["checks"]["background_queues"]["active_api_runs"] == 0
    assert c.post("/v1/runs", json={"input": "x"}).status_code == 202  # the fault fired once


def test_status_fault_on_responses(c: httpx.Client) -> None:
    install(c, {"route": "responses", "kind": "status", "status": 500})
    assert c.post("/v1/responses", json={"input": "x"}).status_code == 500
    assert c.post("/v1/responses", json={"input": "x"}).status_code == 200


def test_stream_cut_on_run_events_loses_no_turn(c: httpx.Client) -> None:
    install(c, {"route": "run_events", "kind": "stream_cut", "after_events": 1})
    run_id = submit(c, {"input": "cut"})
    wait_status(c, run_id)
    with pytest.raises(TRANSPORT_ERRORS):
        with c.stream("GET", f"/v1/runs/{run_id}/events") as response:
            b"".join(response.iter_raw())
    assert wait_status(c, run_id)["status"] == "completed"
    assert len(c.get(f"/api/sessions/{run_id}/messages").json()["data"]) == 2


def test_journal_names_the_sessions_of_runs_and_responses(c: httpx.Client) -> None:
    run_id = submit(c, {"input": "x"})
    submit(c, {"input": "x", "session_id": "chosen"})
    response = c.post("/v1/responses", json={"input": "x"})
    entries = c.get("/_fixture/requests").json()["data"]
    assert [(e["route"], e["session_ids"]) for e in entries] == [
        ("runs", [run_id]), ("runs", ["chosen"]), ("responses", [response.headers["x-hermes-session-id"]])]
    assert [e["route"] for e in c.get("/_fixture/requests", params={"session_id": "chosen"}).json()["data"]] == ["runs"]


def test_reset_forgets_runs_and_responses_and_repeats_ids(c: httpx.Client) -> None:
    def once() -> tuple[str, str]:
        c.post("/_fixture/reset", json={"to": "empty"})
        run_id = submit(c, {"input": "x"})
        wait_status(c, run_id)
        _, events, _ = read_events(c, run_id)
        assert names(events)[-1] == "run.completed"
        return run_id, c.post("/v1/responses", json={"input": "x"}).json()["id"]

    first = once()
    assert c.get(f"/v1/responses/{first[1]}").status_code == 200
    second = once()
    assert second == first  # deterministic ids restart with the reset
    c.post("/_fixture/reset", json={"to": "empty"})
    assert c.get(f"/v1/runs/{first[0]}").status_code == 404
    assert c.get(f"/v1/responses/{first[1]}").status_code == 404


def test_a_finished_status_is_kept_for_an_hour(c: httpx.Client) -> None:
    run_id = submit(c, {"input": "x"})
    wait_status(c, run_id)
    assert c.post("/_fixture/clock", json={"advance": 3500}).status_code == 200
    assert c.get(f"/v1/runs/{run_id}").status_code == 200
    c.post("/_fixture/clock", json={"advance": 200})
    assert c.get(f"/v1/runs/{run_id}").status_code == 404


def test_an_unread_queue_is_dropped_after_five_minutes(c: httpx.Client) -> None:
    run_id = submit(c, {"input": "x"})
    wait_status(c, run_id)
    c.post("/_fixture/clock", json={"advance": 301})
    submit(c, {"input": "y"})  # a submit sweeps
    assert c.get(f"/v1/runs/{run_id}/events").status_code == 404
    assert c.get(f"/v1/runs/{run_id}").json()["status"] == "completed"
