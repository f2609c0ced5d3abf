"""0.20+'s model routes on a real server, each behaviour naming its source in
/work/shared/spec/hermes-after-0.19.md: `GET /api/model/options` (§1.4, [R V2 §E, V4]) and
`POST /api/sessions/{id}/model` (§1.4, [M #70950; R V2 §B.11]); §4 items 4 and 9."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.support.db import session_row
from tests.support.server import RunningServer, start_server

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

MODEL = "hermes-agent"


@pytest.fixture(scope="module", params=["0.20.4", "0.21.2"])
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("models") / "hermes", "--hermes-version", request.param)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("old") / "hermes")
    yield srv
    srv.stop()


def test_0_19_0_serves_neither_route(old: RunningServer) -> None:
    """§1.2: both routes are new after 0.19.0 (V0's table has neither)."""
    assert old.client.get("/api/model/options").status_code == 404
    old.client.post("/api/sessions", json={"id": "old-lock"})
    assert old.client.post("/api/sessions/old-lock/model", json={"model": MODEL}).status_code == 404
    features = old.client.get("/v1/capabilities").json()["features"]
    assert "model_options" not in features and "session_model_lock" not in features


def test_model_options_is_the_fixed_inventory(newer: RunningServer) -> None:
    """§1.4 GET /api/model/options [R V2 §E, V4]: the picker shape (`providers`, `model`, `provider`)."""
    for query in ("", "?refresh=1", "?refresh=true", "?refresh=nonsense"):
        answer = newer.client.get(f"/api/model/options{query}")
        assert answer.status_code == 200
        body = answer.json()
        assert body["model"] == MODEL and body["provider"] == "echo"
        assert body["providers"] == [{"slug": "echo", "name": "hermes-server echo agent", "models": [MODEL],
                                      "total_models": 1, "is_current": True, "is_user_defined": False,
                                      "authenticated": True}]


def test_model_options_needs_the_key(newer: RunningServer) -> None:
    """§1.4: auth first; 0.20+'s 401 envelope (§1.3 [M #70169])."""
    answer = httpx.get(f"{newer.url}/api/model/options")
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "gateway_auth_failed"


def test_capabilities_advertise_the_model_routes(newer: RunningServer) -> None:
    """§1.3 capabilities [R V4 full JSON]: `model_options`, `session_model_lock` true, their endpoints,
    in 0.21.2's order; `run_steer` is true now that steer is served (tests/api/test_run_steer.py)."""
    caps = newer.client.get("/v1/capabilities").json()
    features = caps["features"]
    assert features["model_options"] is True and features["session_model_lock"] is True
    assert features["run_steer"] is True
    names = list(features)
    assert names.index("run_stop") < names.index("run_steer") < names.index("run_approval_response")
    assert names.index("session_resources") < names.index("model_options") < names.index("session_chat")
    assert names.index("session_fork") < names.index("session_model_lock") < names.index("admin_config_rw")
    endpoints = caps["endpoints"]
    assert endpoints["model_options"] == {"method": "GET", "path": "/api/model/options"}
    assert endpoints["session_model_lock"] == {"method": "POST", "path": "/api/sessions/{session_id}/model"}
    order = list(endpoints)
    assert order[:4] == ["health", "health_detailed", "models", "model_options"]
    assert order.index("session_chat_stream") < order.index("session_model_lock")


def test_openapi_documents_the_added_routes(newer: RunningServer) -> None:
    paths = newer.client.get("/openapi.json").json()["paths"]
    assert "get" in paths["/api/model/options"] and "post" in paths["/api/sessions/{session_id}/model"]


def test_lock_is_persisted_and_answered(newer: RunningServer) -> None:
    """§1.4 POST /api/sessions/{id}/model [R V2 §B.11]: model_config.browser_model_lock merged,
    sessions.model set, system_prompt cleared, the `hermes.session.model_lock` answer."""
    sid = "lock-ok"
    assert newer.client.post("/api/sessions", json={"id": sid, "model": "other"}).status_code == 201
    answer = newer.client.post(f"/api/sessions/{sid}/model",
                               json={"model": MODEL, "model_options": {"reasoning": {"enabled": True}}})
    assert answer.status_code == 200
    assert answer.json() == {"object": "hermes.session.model_lock", "session_id": sid, "runtime": {
        "provider": "echo", "model": MODEL, "route_source": "session_model_lock",
        "requested": {"provider": None, "model": MODEL}, "model_lock": "accepted"}}
    row = session_row(newer.db_path, sid)
    assert row["model"] == MODEL and row["system_prompt"] is None
    lock = json.loads(row["model_config"])["browser_model_lock"]
    assert {k: lock[k] for k in ("provider", "model", "model_options", "route_source", "confirmed")} == {
        "provider": "echo", "model": MODEL, "model_options": {"reasoning": {"enabled": True}},
        "route_source": "session_model_lock", "confirmed": True}
    assert newer.client.get(f"/api/sessions/{sid}").json()["session"]["model"] == MODEL


@pytest.mark.parametrize("body", [{"model_id": MODEL, "provider_id": "echo"}, {"model": f"echo::{MODEL}"},
                                  {"provider": "echo"}])
def test_lock_accepts_the_aliases_and_prefix_form(newer: RunningServer, body: dict[str, str]) -> None:
    """§1.4 [R V2 §B.11]: `model_id`, `provider_id`, `provider::model`."""
    sid = f"lock-alias-{abs(hash(json.dumps(body))) % 10**8}"
    newer.client.post("/api/sessions", json={"id": sid})
    answer = newer.client.post(f"/api/sessions/{sid}/model", json=body)
    assert answer.status_code == 200 and answer.json()["runtime"]["model"] == MODEL


def test_lock_errors(newer: RunningServer) -> None:
    """§1.4 [R V2 §B.11]: 404 session_not_found, 400 missing_model, 409 model_lock_unavailable."""
    missing = newer.client.post("/api/sessions/no-such-lock/model", json={"model": MODEL})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "session_not_found"
    sid = "lock-errors"
    newer.client.post("/api/sessions", json={"id": sid})
    for body in ({}, {"model": ""}, {"model": "  ", "provider": ""}):
        refused = newer.client.post(f"/api/sessions/{sid}/model", json=body)
        assert refused.status_code == 400
        assert refused.json()["error"] == {
            "message": "require_model_lock was set but no model/provider was provided",
            "type": "invalid_request_error", "param": None, "code": "missing_model"}
    for body in ({"model": "gpt-5"}, {"provider": "nous", "model": MODEL}, {"model": "nous::x"}):
        refused = newer.client.post(f"/api/sessions/{sid}/model", json=body)
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "model_lock_unavailable"
        assert refused.json()["error"]["message"] == (
            "Requested Browser model lock cannot be routed; refusing silent global fallback")
    assert session_row(newer.db_path, sid)["model_config"] is None or "browser_model_lock" not in json.loads(
        session_row(newer.db_path, sid)["model_config"])
    for raw in (b"[]", b"{", b'{"model": 5}'):
        bad = newer.client.post(f"/api/sessions/{sid}/model", content=raw)
        assert bad.status_code == 400
