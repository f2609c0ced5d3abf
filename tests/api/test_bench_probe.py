"""The benchmark's route probe (`benchmarks.run.route_available`) writes nothing.

A probe that created a session on the measured server alone put that session at the head of
its list page, so the changing list variant PATCHed an id the compared profiles' copies of the
dataset lacked: about 2% of their PATCHes answered 404 ("unexpected statuses").
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.run import route_available
from benchmarks.servers import Server
from benchmarks.workloads import WORKLOADS
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
