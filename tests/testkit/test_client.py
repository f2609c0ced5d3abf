"""The control client and the launcher without pytest's fixtures: `with HermesServer() as srv`,
every `/_fixture/` call through `FixtureClient`, and the journal assertions."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from hermes_server.testkit import FixtureClient, FixtureError, HermesServer
from tests.support.server import start_server

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_server"


@pytest.fixture(scope="module")
def srv() -> Iterator[HermesServer]:
    with HermesServer(deterministic=True) as server:
        yield server
    assert not server.alive


@pytest.fixture
def control(srv: HermesServer) -> FixtureClient:
    srv.control.reset()
    return srv.control


def test_the_launcher_gives_a_server_and_removes_everything(tmp_path: Path) -> None:
    with HermesServer() as server:
        home, pid = server.home, server.pid
        assert server.startup_seconds is not None and server.startup_seconds < 5
        assert httpx.get(f"{server.base_url}/api/sessions", headers=server.headers).status_code == 200
        assert httpx.get(f"{server.base_url}/api/sessions").status_code == 401
        assert (home / "state.db").exists() and pid
    assert not home.parent.exists() and not server.alive
    assert server.stop() is None  # stopping twice is harmless


def test_reset_and_seed_from_a_dict_and_a_file(control: FixtureClient, srv: HermesServer, tmp_path: Path) -> None:
    loaded = control.seed({"sessions": [{"id": "a", "messages": [{"role": "user", "content": "x"}]}]})
    assert (loaded.sessions_written, loaded.messages_written, loaded.sessions_total) == (1, 1, 1)
    path = tmp_path / "more.yaml"
    path.write_text("sessions:\n  - id: b\n    title: From YAML\n")
    assert control.seed(path).sessions_total == 2
    assert srv.http.get("/api/sessions/b").json()["session"]["title"] == "From YAML"
    reset = control.reset()
    assert (reset.to, reset.sessions_total) == ("empty", 0)
    with pytest.raises(FixtureError) as refused:
        control.reset("fixture")
    assert refused.value.status == 400 and "without --fixture" in refused.value.message


def test_a_rejected_seed_names_the_field(control: FixtureClient) -> None:
    with pytest.raises(FixtureError) as refused:
        control.seed({"sessions": [{"id": "a", "colour": "red"}]})
    assert (refused.value.status, refused.value.code) == (400, "invalid_fixture")
    assert "colour" in str(refused.value)


def test_faults_set_add_clear_list(control: FixtureClient, srv: HermesServer) -> None:
    installed = control.faults.set([{"route": "session_get", "kind": "status", "status": 503, "times": 2}])
    assert [(f.kind, f.fired, f.remaining) for f in installed] == [("status", 0, 2)]
    control.faults.add({"route": "sessions_list", "kind": "status", "status": 429, "id": "slow-down"})
    assert [f.id for f in control.faults.list()] == ["f1", "slow-down"]
    assert srv.http.get("/api/sessions/x").status_code == 503
    assert srv.http.get("/api/sessions").status_code == 429
    assert [(f.fired, f.remaining) for f in control.faults.list()] == [(1, 1), (1, 0)]
    assert control.faults.set([{"kind": "latency", "latency_ms": 1}])[0].spec["latency_ms"] == 1
    assert control.faults.clear() == [] and control.faults.list() == []
    with pytest.raises(FixtureError) as refused:
        control.faults.set({"kind": "nonsense"})
    assert refused.value.code == "invalid_fault"


def test_requests_filters_and_assertions(control: FixtureClient, srv: HermesServer) -> None:
    srv.http.post("/api/sessions", json={"id": "s1"})
    srv.http.get("/api/sessions/s1")
    srv.http.get("/api/sessions/s1")
    srv.http.get("/api/sessions/nope")
    assert [r.seq for r in control.requests()] == [1, 2, 3, 4]
    assert len(control.requests("session_get")) == 3
    assert len(control.requests("/api/sessions/{session_id}", method="GET", session_id="s1")) == 2
    assert [r.path for r in control.requests(status=404)] == ["/api/sessions/nope"]
    (created,) = control.requests("session_create", bodies=True)
    assert created.request_body == {"id": "s1"} and created.response_body["session"]["id"] == "s1"
    assert control.requests("session_create")[0].request_body == {"redacted": True, "bytes": len(b'{"id":"s1"}')}

    calls = control.assert_called("session_get", times=2, session_id="s1")
    assert [c.status for c in calls] == [200, 200]
    control.assert_called("session_create")
    control.assert_not_called("session_delete")
    with pytest.raises(AssertionError) as wrong:
        control.assert_called("session_get", times=1, session_id="s1")
    message = str(wrong.value)
    assert "expected session_get (session_id='s1') to be called 1 time, it was called 2 times" in message
    assert "#4 GET /api/sessions/nope -> 404" in message  # every call of the route, to see what went wrong
    with pytest.raises(AssertionError, match="at least once"):
        control.assert_called("session_fork")
    control.clear_requests()
    assert control.requests() == []


def test_no_key_in_bodies(control: FixtureClient, srv: HermesServer) -> None:
    srv.http.post("/api/sessions", json={"id": "clean", "title": "nothing secret"})
    control.assert_no_key_in_bodies()
    srv.http.post("/api/sessions", json={"id": "leaky", "title": f"key {srv.api_key}"})
    srv.http.get(f"/api/sessions?q={srv.api_key}")
    with pytest.raises(AssertionError) as leak:
        control.assert_no_key_in_bodies()
    message = str(leak.value)
    assert "2 request(s) carried the key" in message and "#2 POST /api/sessions" in message
    assert srv.api_key not in message  # the assertion never prints the secret itself
    control.assert_no_key_in_bodies("some-other-secret-value")


def test_clock_get_set_advance_step(control: FixtureClient, srv: HermesServer) -> None:
    clock = control.clock.get()
    assert clock.deterministic and clock.manual and clock.now == 1893456000.0
    assert control.clock.set(datetime(2031, 1, 1, tzinfo=UTC), step=0).now == 1924992000.0
    assert control.clock.advance(60).now == 1924992060.0
    assert control.clock.set("2032-01-01T00:00:00Z").now == 1956528000.0
    assert control.clock.step(0.5).step == 0.5
    srv.http.post("/api/sessions", json={"id": "timed"})
    assert srv.http.get("/api/sessions/timed").json()["session"]["started_at"] >= 1956528000.0
    with pytest.raises(FixtureError, match="invalid_clock"):
        control.clock.advance("soon")  # type: ignore[arg-type]


def test_the_client_works_on_any_server_with_the_control_api(tmp_path: Path) -> None:
    """Not only one the launcher started: here the project's own test harness starts it."""
    server = start_server(tmp_path / "home", "--fixture-api")
    try:
        with FixtureClient(server.url, server.key) as control:
            assert control.reset().to == "empty"
        with FixtureClient(server.url, "wrong-key-0123456789") as control, pytest.raises(FixtureError) as refused:
            control.faults.list()
        assert refused.value.status == 401
    finally:
        server.stop()
    plain = start_server(tmp_path / "plain")
    try:
        with FixtureClient(plain.url, plain.key) as control, pytest.raises(FixtureError, match="--fixture-api"):
            control.reset()
    finally:
        plain.stop()


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_kit_and_the_server_do_not_import_each_other() -> None:
    """The kit drives a server over HTTP only, so it works against any build or a container, and
    the server never carries test-runner code."""
    for path in PACKAGE.rglob("*.py"):
        inside = "testkit" in path.relative_to(PACKAGE).parts
        ours = {n for n in _imports(path) if n.startswith("hermes_server")}
        if inside:
            assert all(n.startswith("hermes_server.testkit") for n in ours), path
        else:
            assert not any(n.startswith("hermes_server.testkit") for n in ours), path


def test_read_document_refuses_what_is_not_an_object(tmp_path: Path) -> None:
    from hermes_server.testkit.client import read_document

    path = tmp_path / "list.json"
    path.write_text(json.dumps([1]))
    with pytest.raises(FixtureError, match="a fixture is an object"):
        read_document(path)
