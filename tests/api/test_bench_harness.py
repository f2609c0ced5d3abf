"""The benchmark harness against a real server: the route probe (`benchmarks.run.route_available`)
writes nothing, and `benchmarks.ab` reads whole answers over one kept-alive connection.

A probe that created a session on the measured server alone put that session at the head of
its list page, so the changing list variant PATCHed an id the compared profiles' copies of the
dataset lacked: about 2% of their PATCHes answered 404 ("unexpected statuses").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.ab import Connection, Figures, cycle, labels, parse_args, pinned, unpin
from benchmarks.run import route_available
from benchmarks.servers import Server
from benchmarks.workloads import WORKLOADS
from hermes_server.testkit.process import HermesServer
from tests.support.server import start_server


def test_probing_every_route_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes")
    try:
        srv.client.post("/api/sessions", json={"id": "kept"})
        before = srv.client.get("/api/sessions", params={"limit": 100}).json()["data"]
        bench_view = Server("hermes-server", srv.url, srv.key, 0)
        assert all(route_available(bench_view, workload) for workload in WORKLOADS.values())
        assert srv.client.get("/api/sessions", params={"limit": 100}).json()["data"] == before
        assert srv.client.get("/api/sessions/kept/messages").json()["data"] == []
    finally:
        srv.stop()


def test_ab_reads_whole_answers_on_one_connection_and_stops_on_a_refusal(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes")
    try:
        connection = Connection(Server("hermes-server", srv.url, srv.key, 0))
        assert connection.request("POST", "/api/sessions", '{"id": "a"}') == 201
        assert [connection.request("GET", "/api/sessions/a", None) for _ in range(3)] == [200] * 3
        assert connection.request("GET", "/api/sessions/missing", None) == 404
        assert cycle(connection, WORKLOADS["list (changing)"].calls, "a", "t1_") > 0
        with pytest.raises(SystemExit, match="answered 404"):
            cycle(connection, WORKLOADS["get"].calls, "missing", "t2_")
        connection.close()
    finally:
        srv.stop()


def test_ab_ratio_pairs_cycles_and_refuses_unknown_profiles() -> None:
    # Cycle 2 was slow on every server (the machine, not a profile): pairing cancels it.
    figures = Figures({"0.19.0": [1.0, 5.0, 1.0], "0.20.4": [1.1, 5.5, 1.0]})
    assert round(figures.ratio("0.20.4", "0.19.0"), 3) == round(1 / 1.1, 3)
    with pytest.raises(SystemExit):
        parse_args(["--versions", "0.18.0"])
    assert parse_args([]).versions == ["0.20.4", "0.21.2"]
    assert labels(["0.19.0", "0.21.2", "0.21.2"]) == ["0.19.0#2", "0.21.2", "0.21.2#2"]  # an A/A run too


def _allowed(pid: int) -> set[frozenset[int]]:
    return {frozenset(os.sched_getaffinity(int(task))) for task in os.listdir(f"/proc/{pid}/task")}


def test_the_lock_step_pins_client_and_server_threads_to_one_cpu_and_gives_them_back(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", in_process=False)
    try:
        assert isinstance(srv.launcher, HermesServer) and srv.launcher.pid is not None  # a process to pin
        pid = srv.launcher.pid
        before = set(os.sched_getaffinity(0))
        cpus = pinned([pid])
        if len(before) < 2:
            assert cpus is None
            return
        try:
            assert _allowed(pid) == {frozenset({max(before)})} and os.sched_getaffinity(0) == {max(before)}
        finally:
            unpin([pid], cpus)
        assert _allowed(pid) == {frozenset(before)} and os.sched_getaffinity(0) == before
    finally:
        srv.stop()
