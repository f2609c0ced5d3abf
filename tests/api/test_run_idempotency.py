"""0.21.2's durable `Idempotency-Key` on `POST /v1/runs`, on a real server.

Source: /work/shared/spec/hermes-after-0.19.md §1.4 "POST /v1/runs with durable Idempotency-Key"
[R V4 capabilities and `replayed:false` live; V3 `_handle_runs`, `_replay_or_conflict`; the store
`api_server_run_idempotency.py`], §1.3 capabilities (`runs_idempotency` object, V4 full JSON) [R],
§4 item 8. The restart half is tests/api/test_runs_021.py.
"""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.openapi import resolved
from tests.support.runs import RUN_SCRIPT, wait_status
from tests.support.server import RunningServer, start_server, start_with_script

pytestmark = pytest.mark.in_process

KEYED = {"Idempotency-Key": "order-42"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("idem") / "home", RUN_SCRIPT, "--hermes-version", "0.21.2",
                            "--fixture-api")
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _fresh(server: RunningServer) -> None:
    assert server.client.post("/_fixture/reset", json={"to": "empty"}).status_code == 200


def _submit(server: RunningServer, body: object, key: str = "order-42", **headers: str):
    return server.client.post("/v1/runs", json=body, headers={"Idempotency-Key": key, **headers})


def test_first_call_then_replay(server: RunningServer) -> None:
    """First: 202 `replayed: false`, no replay header; same key and body: 202 with the original
    run id, `replayed: true`, `Idempotency-Replayed: true`, and the run's status now."""
    first = _submit(server, {"input": "hello"})
    assert first.status_code == 202 and "idempotency-replayed" not in first.headers
    body = first.json()
    assert body == {"run_id": body["run_id"], "status": "started", "replayed": False}
    assert wait_status(server.client, body["run_id"])["status"] == "completed"
    again = _submit(server, {"input": "hello"})
    assert again.status_code == 202 and again.headers["idempotency-replayed"] == "true"
    assert again.json() == {"run_id": body["run_id"], "status": "completed", "replayed": True}
    # Nothing ran twice: one user row for the run's session.
    messages = server.client.get(f"/api/sessions/{body['run_id']}/messages").json()["data"]
    assert [m["role"] for m in messages] == ["user", "assistant"]


def test_replay_of_a_live_run_names_its_status(server: RunningServer) -> None:
    run_id = _submit(server, {"input": "slow one"}).json()["run_id"]
    wait_status(server.client, run_id, ("running",))
    again = _submit(server, {"input": "slow one"})
    assert again.json() == {"run_id": run_id, "status": "running", "replayed": True}
    server.client.post(f"/v1/runs/{run_id}/stop")
    assert wait_status(server.client, run_id)["status"] == "cancelled"


def test_a_different_body_or_session_key_conflicts(server: RunningServer) -> None:
    """The fingerprint is the body and the X-Hermes-Session-Key header: either changed is a 409."""
    _submit(server, {"input": "hello"})
    for answer in (_submit(server, {"input": "hello!"}),
                   _submit(server, {"input": "hello"}, **{"X-Hermes-Session-Key": "memory-1"})):
        assert answer.status_code == 409
        assert answer.json() == {"error": {
            "message": "Idempotency-Key was already used with a different request payload",
            "type": "invalid_request_error", "param": None, "code": "idempotency_key_conflict"}}


def test_key_order_in_the_body_does_not_matter(server: RunningServer) -> None:
    first = server.client.post("/v1/runs", content=b'{"input": "hi", "instructions": "be brief"}',
                               headers={**KEYED, "Content-Type": "application/json"})
    again = server.client.post("/v1/runs", content=b'{"instructions": "be brief", "input": "hi"}',
                               headers={**KEYED, "Content-Type": "application/json"})
    assert again.json()["run_id"] == first.json()["run_id"] and again.json()["replayed"] is True


@pytest.mark.parametrize("key", ["k" * 256, "has space", "caf\u00e9", "tab\tin"])
def test_a_key_outside_1_to_255_visible_ascii_is_400(server: RunningServer, key: str) -> None:
    answer = server.client.post("/v1/runs", json={"input": "x"}, headers={"Idempotency-Key": key.encode("utf-8")})
    assert answer.status_code == 400
    assert answer.json()["error"] == {"message": "Idempotency-Key must be 1-255 visible ASCII characters",
                                      "type": "invalid_request_error", "param": None,
                                      "code": "invalid_idempotency_key"}


def test_key_rules_edges(server: RunningServer) -> None:
    """255 visible characters are a key; an empty header is none (each call a new run)."""
    assert _submit(server, {"input": "x"}, key="~" * 255).json()["replayed"] is False
    assert _submit(server, {"input": "x"}, key="!" + "~" * 254).json()["replayed"] is False
    blank = [_submit(server, {"input": "x"}, key="").json() for _ in range(2)]
    assert blank[0]["run_id"] != blank[1]["run_id"] and not blank[1]["replayed"]


def test_checked_in_upstreams_order(server: RunningServer) -> None:
    """Body first (Invalid JSON wins over a bad key), then the key, then the input."""
    bad_json = server.client.post("/v1/runs", content=b"{", headers={"Idempotency-Key": "a b",
                                                                      "Content-Type": "application/json"})
    assert bad_json.status_code == 400 and bad_json.json()["error"]["message"] == "Invalid JSON"
    no_input = server.client.post("/v1/runs", json={}, headers={"Idempotency-Key": "a b"})
    assert no_input.json()["error"]["code"] == "invalid_idempotency_key"
    keyed_no_input = _submit(server, {})
    assert keyed_no_input.status_code == 400 and keyed_no_input.json()["error"]["message"] == "Missing 'input' field"


def test_the_file_is_upstreams_and_keeps_no_body(server: RunningServer) -> None:
    run_id = _submit(server, {"input": "a secret prompt"}).json()["run_id"]
    wait_status(server.client, run_id)
    path = server.home / "runs_idempotency.db"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(run_idempotency)")]
        rows = conn.execute("SELECT idempotency_key, run_id, status_json, owner_pid FROM run_idempotency").fetchall()
    assert columns == ["scope", "idempotency_key", "fingerprint", "run_id", "status_json", "owner_pid",
                       "owner_started", "retention_until", "acknowledged_at", "created_at", "updated_at"]
    assert [(r[0], r[1]) for r in rows] == [("order-42", run_id)]
    assert '"status":"completed"' in rows[0][2] and "a secret prompt" not in rows[0][2]
    assert "test-key" not in path.read_bytes().decode("latin-1")  # the scope is a hash, never the key


def test_retention_is_a_day_on_the_servers_clock(server: RunningServer) -> None:
    run_id = _submit(server, {"input": "hello"}).json()["run_id"]
    wait_status(server.client, run_id)
    server.client.post("/_fixture/clock", json={"advance": 86_000})
    assert _submit(server, {"input": "hello"}).json()["replayed"] is True
    server.client.post("/_fixture/clock", json={"advance": 86_401})
    fresh = _submit(server, {"input": "hello"}).json()
    assert fresh["replayed"] is False and fresh["run_id"] != run_id


def test_a_reset_forgets_the_keys(server: RunningServer) -> None:
    run_id = _submit(server, {"input": "hello"}).json()["run_id"]
    wait_status(server.client, run_id)
    server.client.post("/_fixture/reset", json={"to": "empty"})
    assert _submit(server, {"input": "hello"}).json()["run_id"] != run_id


def test_capabilities_object(server: RunningServer) -> None:
    """V4: `runs_idempotency` is an object, right after `run_submission`."""
    features = server.client.get("/v1/capabilities").json()["features"]
    names = list(features)
    assert names[names.index("run_submission") + 1] == "runs_idempotency"
    assert features["runs_idempotency"] == {"supported": True, "durable": True, "retention_seconds": 86400}
    document = server.client.get("/openapi.json").json()
    # The runs' key has its own component (chat completions' Idempotency-Key keeps 0.19.0's rules).
    parameters = resolved(document["paths"]["/v1/runs"]["post"]["parameters"], document)
    assert [p["in"] for p in parameters if p["name"] == "Idempotency-Key"] == ["header"]
    assert "409" in document["paths"]["/v1/runs"]["post"]["responses"]


@pytest.mark.parametrize("version", ["0.19.0", "0.20.4"])
def test_older_profiles_keep_no_keys(tmp_path: Path, version: str) -> None:
    srv = start_server(tmp_path / "home", "--hermes-version", version)
    try:
        features = srv.client.get("/v1/capabilities").json()["features"]
        assert "runs_idempotency" not in features
        ids = [srv.client.post("/v1/runs", json={"input": "hi"}, headers=KEYED).json() for _ in range(2)]
        assert ids[0]["run_id"] != ids[1]["run_id"] and "replayed" not in ids[1]
        long_key = srv.client.post("/v1/runs", json={"input": "hi"}, headers={"Idempotency-Key": "k" * 300})
        assert long_key.status_code == 202
        for answer in ids:
            wait_status(srv.client, answer["run_id"])
        assert not (srv.home / "runs_idempotency.db").exists()
    finally:
        srv.stop()


def test_a_replay_answers_on_a_full_server(tmp_path: Path) -> None:
    """The cap (429) applies only to new runs; the body is read before it (§1.4)."""
    srv = start_with_script(tmp_path / "home", RUN_SCRIPT, "--hermes-version", "0.21.2", "--max-concurrent-runs", "1")
    try:
        run_id = _submit(srv, {"input": "slow one"}).json()["run_id"]
        wait_status(srv.client, run_id, ("running",))
        assert _submit(srv, {"input": "slow one"}).json() == {"run_id": run_id, "status": "running", "replayed": True}
        assert srv.client.post("/v1/runs", json={"input": "another"}).status_code == 429
        srv.client.post(f"/v1/runs/{run_id}/stop")
        wait_status(srv.client, run_id)
    finally:
        srv.stop()


def test_stop_on_a_run_another_live_server_owns_is_409(tmp_path: Path) -> None:
    """A kept run live in another server process on this home (same key): its status is readable
    here and stop answers 409 `run_not_active` (§1.4 stop table, V3 `_handle_stop_run`)."""
    home = tmp_path / "home"
    owner = start_with_script(home, RUN_SCRIPT, "--hermes-version", "0.21.2")
    other = start_server(home, "--hermes-version", "0.21.2")
    try:
        run_id = _submit(owner, {"input": "slow one"}).json()["run_id"]
        wait_status(owner.client, run_id, ("running",))
        assert other.client.get(f"/v1/runs/{run_id}").json()["status"] == "running"
        stop = other.client.post(f"/v1/runs/{run_id}/stop")
        assert stop.status_code == 409
        assert stop.json()["error"] == {"message": f"Run is not active in this gateway process: {run_id}",
                                        "type": "invalid_request_error", "param": None, "code": "run_not_active"}
        assert _submit(other, {"input": "slow one"}).json() == {"run_id": run_id, "status": "running",
                                                                "replayed": True}
        owner.client.post(f"/v1/runs/{run_id}/stop")
        assert wait_status(owner.client, run_id)["status"] == "cancelled"
        assert wait_status(other.client, run_id)["status"] == "cancelled"  # read again from the file
    finally:
        other.stop()
        owner.stop()
