"""Discovery endpoints answer like upstream 0.19.0, and claim only what this server serves.

Upstream's answers were recorded into tests/fixtures/oracle_discovery.json (recipe in
tests/fixtures/README.md), so these comparisons need no oracle at run time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes_server.http.responses import SECURITY_HEADERS
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.routes.discovery import capabilities_body
from tests.support.server import RunningServer, start_server

ORACLE = json.loads((Path(__file__).parents[1] / "fixtures" / "oracle_discovery.json").read_text())["probes"]
MAX_BODY = 64 * 1024


def json_type(value: Any) -> str:
    """JSON's own type names, keeping integers apart from floats and booleans."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shape_differences(ours: Any, theirs: Any, path: str = "$") -> list[str]:
    """Every place where key sets or JSON types differ (values are not compared)."""
    if json_type(ours) != json_type(theirs):
        return [f"{path}: {json_type(ours)} here, {json_type(theirs)} upstream"]
    problems: list[str] = []
    if isinstance(ours, dict):
        if list(ours) != list(theirs):
            problems.append(f"{path}: keys {list(ours)} here, {list(theirs)} upstream")
        for key in ours.keys() & theirs.keys():
            problems += shape_differences(ours[key], theirs[key], f"{path}.{key}")
    elif isinstance(ours, list):
        for index, (mine, upstream) in enumerate(zip(ours, theirs, strict=False)):
            problems += shape_differences(mine, upstream, f"{path}[{index}]")
    return problems


@pytest.fixture(scope="module")
def probe(server: RunningServer) -> Iterator[RunningServer]:
    """The shared server, with state.db in use (upstream's recording had one too)."""
    assert server.client.post("/api/sessions", json={"id": "discovery-probe"}).status_code == 201
    yield server


def send(srv: RunningServer, name: str) -> httpx.Response:
    """Replay one recorded probe against hermes-server."""
    req = ORACLE[name]["request"]
    headers = {"Authorization": f"Bearer {srv.key}"} if req["key"] else {}
    return httpx.request(req["method"], srv.url + req["path"], headers=headers, json=req["json"], timeout=10)


@pytest.mark.parametrize("name", ["health", "v1_health", "health_detailed", "models"])
def test_shape_matches_upstream_field_for_field(probe: RunningServer, name: str) -> None:
    response = send(probe, name)
    recorded = ORACLE[name]
    assert response.status_code == recorded["status"] == 200
    assert response.headers["content-type"] == recorded["content_type"]
    assert shape_differences(response.json(), recorded["json"]) == []
    for header, value in SECURITY_HEADERS.items():
        assert response.headers[header] == value
    assert len(response.content) < MAX_BODY


def test_health_values_equal_upstream(probe: RunningServer) -> None:
    assert send(probe, "health").content == json.dumps(ORACLE["health"]["json"]).encode()


def test_models_values(probe: RunningServer) -> None:
    body = send(probe, "models").json()
    ours, theirs = body["data"][0], ORACLE["models"]["json"]["data"][0]
    assert {k: v for k, v in ours.items() if k != "created"} == {k: v for k, v in theirs.items() if k != "created"}
    assert isinstance(ours["created"], int) and not isinstance(ours["created"], bool)


def test_health_detailed_describes_this_process(probe: RunningServer) -> None:
    body = send(probe, "health_detailed").json()
    assert body["status"] == body["readiness"]["status"] == "ok"
    assert body["pid"] == probe.process.pid
    assert body["gateway_state"] == "running" and body["gateway_drainable"] is True
    checks = body["readiness"]["checks"]
    assert list(checks) == list(ORACLE["health_detailed"]["json"]["readiness"]["checks"])
    assert all(entry["status"] == "ok" for entry in checks.values())
    counters = [body["active_agents"], body["pid"], checks["disk"]["free_bytes"],
                checks["gateway"]["connected_platforms"], checks["gateway"]["platforms"],
                *(checks["background_queues"][k] for k in ("active_api_runs", "process_completions",
                                                           "active_delegations"))]
    assert all(type(value) is int for value in counters)


def test_capabilities_shape_and_served_endpoints(probe: RunningServer) -> None:
    response = send(probe, "capabilities")
    ours, theirs = response.json(), ORACLE["capabilities"]["json"]
    assert response.status_code == 200 and len(response.content) < MAX_BODY
    assert list(ours) == list(theirs)
    assert {k: ours[k] for k in ("object", "platform", "model", "auth")} == \
        {k: theirs[k] for k in ("object", "platform", "model", "auth")}
    assert list(ours["runtime"]) == list(theirs["runtime"])
    assert list(ours["features"]) == list(theirs["features"])
    for flag, value in ours["features"].items():
        # Served: upstream's value; not served: false (never a different string or a number).
        assert value in (theirs["features"][flag], False), flag
    # Every endpoint we name is upstream's name for the same method and path.
    assert set(ours["endpoints"]) <= set(theirs["endpoints"])
    for name, endpoint in ours["endpoints"].items():
        assert endpoint == theirs["endpoints"][name], name
    assert ours["features"]["session_resources"] is True and ours["features"]["session_fork"] is True


def test_every_advertised_endpoint_is_served(probe: RunningServer) -> None:
    """Each endpoint answers its method with the handler, not the router's 404/405."""
    endpoints = probe.client.get("/v1/capabilities").json()["endpoints"]
    for name, endpoint in endpoints.items():
        path = re.sub(r"\{[^}]+\}", "__probe__", endpoint["path"])
        response = probe.client.request(endpoint["method"], path, json={})
        assert not response.headers["content-type"].startswith("text/plain"), (name, response.status_code)


def test_features_follow_the_route_table() -> None:
    """Features and endpoints come from the table: add a route, and only then is it advertised."""
    base = [Route("sessions", "/api/sessions", {"GET": Method(_noop, Operation(
        summary="list", responses={200: "SessionList"}, capability="sessions", features=("session_resources",)))})]
    chat = Route("session_chat_stream", "/api/sessions/{session_id}/chat/stream", {"POST": Method(_noop, Operation(
        summary="stream", responses={200: "ChatStream"}, capability="session_chat_stream",
        features=("session_chat_streaming", "session_key_header")))})
    without = capabilities_body(base, model="m", key_required=True, cors=False)
    assert without["features"]["session_chat_streaming"] is False
    assert without["features"]["session_key_header"] is False
    assert "session_chat_stream" not in without["endpoints"]
    with_chat = capabilities_body([*base, chat], model="m", key_required=False, cors=True)
    assert with_chat["features"]["session_chat_streaming"] is True
    assert with_chat["features"]["session_key_header"] == "X-Hermes-Session-Key"
    assert with_chat["endpoints"]["session_chat_stream"] == {
        "method": "POST", "path": "/api/sessions/{session_id}/chat/stream"}
    assert with_chat["auth"]["required"] is False and with_chat["features"]["cors"] is True


async def _noop(*_: Any) -> None:
    return None


@pytest.mark.parametrize("name", ["health_detailed_no_key", "models_no_key", "capabilities_no_key"])
def test_keyed_discovery_refuses_without_key_like_upstream(probe: RunningServer, name: str) -> None:
    response = send(probe, name)
    assert response.status_code == ORACLE[name]["status"] == 401
    assert response.content == json.dumps(ORACLE[name]["json"]).encode()


@pytest.mark.parametrize("name", ["unknown_path", "trailing_slash", "health_post", "health_head", "sessions_put"])
def test_framework_answers_like_upstream(probe: RunningServer, name: str) -> None:
    response, recorded = send(probe, name), ORACLE[name]
    assert response.status_code == recorded["status"]
    assert response.headers["content-type"] == recorded["content_type"]
    assert response.headers.get("allow") == recorded.get("allow")
    assert response.text == recorded["text"]


def _served(srv: RunningServer, feature: str) -> bool:
    return srv.client.get("/v1/capabilities").json()["features"][feature] is not False


@pytest.mark.parametrize("name, feature", [
    ("chat_completions_get", "chat_completions"),
    ("chat_stream_missing_session", "session_chat_streaming"),
    ("chat_missing_session", "session_chat"),
])
def test_mode_probes(probe: RunningServer, name: str, feature: str) -> None:
    """Clients pick their mode from these answers: upstream's when served, a plain 404 when not."""
    response, recorded = send(probe, name), ORACLE[name]
    if _served(probe, feature):
        assert response.status_code == recorded["status"]
        assert response.headers.get("allow") == recorded.get("allow")
        assert response.content == (json.dumps(recorded["json"]).encode() if "json" in recorded
                                    else recorded["text"].encode())
    else:
        assert (response.status_code, response.text) == (404, "404: Not Found")


def test_open_server_with_cors_reports_it(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", "--cors-origins", "https://app.example", key=None)
    try:
        body = srv.client.get("/v1/capabilities").json()
        assert body["auth"] == {"type": "bearer", "required": False}
        assert body["features"]["cors"] is True
        assert srv.client.get("/health/detailed").status_code == 200
    finally:
        srv.stop()


def test_a_refused_origin_is_named_in_the_log_once_and_the_answer_stays_upstreams(tmp_path: Path) -> None:
    """Once only `GET - 403` in the log: nothing said which origin or which option."""
    srv = start_server(tmp_path / "hermes", "--cors-origins", "https://app.example")
    try:
        for _ in range(2):
            refused = srv.client.get("/api/sessions", headers={"Origin": "http://localhost:3000"})
            assert (refused.status_code, refused.content) == (403, b"")
        assert srv.client.get("/api/sessions", headers={"Origin": "https://app.example"}).status_code == 200
        lines = [line for line in srv.log().splitlines() if "Origin" in line]
        assert len(lines) == 1, lines
        assert "http://localhost:3000" in lines[0] and "--cors-origins" in lines[0] and "https://app.example" in lines[0]
    finally:
        srv.stop()
