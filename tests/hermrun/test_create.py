"""POST /v1/sessions: fields, defaults, the recorded version, roles, unknown agents and tags."""

from __future__ import annotations

from typing import Any

import pytest

from tests.hermrun.support import HermRunServer, error

pytestmark = pytest.mark.in_process

BASE = {"agentId": "agent_123", "subjectId": "user_1"}


def refused(hr: HermRunServer, body: Any, status: int = 400) -> dict[str, Any]:
    r = hr.client.post("/v1/sessions", json=body)
    assert r.status_code == status, r.text
    return r.json()


def test_a_new_session_is_idle_and_records_everything(hr: HermRunServer) -> None:
    hr.clock(now=1893456000.0, step=0)
    r = hr.client.post("/v1/sessions", json={**BASE, "role": "readonly", "title": "Holiday campaign",
                                             "yoloMode": False, "metadata": {"campaignId": "camp_456"}})
    assert r.status_code == 201
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {
        "object": "agent.session", "id": "session_0000000000000001", "agentId": "agent_123",
        "agentVersion": "v1", "subjectId": "user_1", "status": "idle", "role": "readonly",
        "title": "Holiday campaign", "yoloMode": False, "preview": False, "tag": None,
        "metadata": {"campaignId": "camp_456"}, "usage": None,
        "createdAt": "2030-01-01T00:00:00.000Z", "updatedAt": "2030-01-01T00:00:00.000Z",
    }
    assert hr.client.get("/v1/sessions/session_0000000000000001").json() == r.json()


def test_defaults(hr: HermRunServer) -> None:
    session = hr.create(**BASE)
    assert (session["yoloMode"], session["preview"], session["role"], session["title"], session["tag"],
            session["metadata"]) == (False, False, None, None, None, {})


def test_yolo_mode_true_is_recorded(hr: HermRunServer) -> None:
    assert hr.create(**BASE, yoloMode=True)["yoloMode"] is True


@pytest.mark.parametrize("body, message, param", [
    ({"subjectId": "u"}, "agentId is required", "agentId"),
    ({"agentId": "agent_123"}, "subjectId is required", "subjectId"),
    ({"agentId": "", "subjectId": "u"}, "agentId must not be empty", "agentId"),
    ({"agentId": "agent_123", "subjectId": ""}, "subjectId must not be empty", "subjectId"),
    ({"agentId": 123, "subjectId": "u"}, "agentId must be a string", "agentId"),
    ({**BASE, "yoloMode": "yes"}, "yoloMode must be a boolean", "yoloMode"),
    ({**BASE, "preview": "yes"}, "preview must be a boolean", "preview"),
    ({**BASE, "metadata": {"n": 1}}, "metadata values must be strings (key 'n' is not)", "metadata"),
    ({**BASE, "metadata": ["x"]}, "metadata must be an object", "metadata"),
    ({**BASE, "preview": True, "tag": "feature-x"}, "preview: true and tag are mutually exclusive", "tag"),
])
def test_validation_errors(hr: HermRunServer, body: dict[str, Any], message: str, param: str) -> None:
    assert refused(hr, body) == error("validation_error", message, param)


@pytest.mark.parametrize("raw, message", [(b"{", "request body must be valid JSON"),
                                          (b"[]", "request body must be a JSON object")])
def test_bodies_that_are_not_objects(hr: HermRunServer, raw: bytes, message: str) -> None:
    r = hr.client.post("/v1/sessions", content=raw)
    assert (r.status_code, r.json()) == (400, error("validation_error", message))


def test_preview_pins_the_newest_unpromoted_version_and_tag_its_target(hr: HermRunServer) -> None:
    assert hr.create(**BASE)["agentVersion"] == "v1"
    preview = hr.create(**BASE, preview=True)
    assert (preview["agentVersion"], preview["preview"]) == ("v3", True)
    tagged = hr.create(**BASE, tag="feature-x")
    assert (tagged["agentVersion"], tagged["tag"]) == ("v2", "feature-x")
    assert hr.create(**BASE, preview=False, tag="feature-x")["agentVersion"] == "v2"


def test_the_tag_is_resolved_once(hr: HermRunServer) -> None:
    tagged = hr.create(**BASE, tag="feature-x")
    moved = {"id": "agent_123", "versions": [{"id": "v1", "roles": ["readonly"]}, {"id": "v2"}, {"id": "v3"}],
             "production": "v1", "tags": {"feature-x": "v3"}}
    assert hr.seed({"agents": [moved]}).status_code == 200
    assert hr.client.get(f"/v1/sessions/{tagged['id']}").json()["agentVersion"] == "v2"
    assert hr.create(**BASE, tag="feature-x")["agentVersion"] == "v3"


def test_promotion_moves_new_sessions_only(hr: HermRunServer) -> None:
    before = hr.create(**BASE)
    promoted = {"id": "agent_123", "versions": [{"id": "v1"}, {"id": "v2"}, {"id": "v3"}], "production": "v3"}
    assert hr.seed({"agents": [promoted]}).status_code == 200
    assert hr.client.get(f"/v1/sessions/{before['id']}").json()["agentVersion"] == "v1"
    assert hr.create(**BASE)["agentVersion"] == "v3"
    assert hr.create(**BASE, preview=True)["agentVersion"] == "v3"  # nothing newer: production itself


def test_a_role_the_recorded_version_does_not_define(hr: HermRunServer) -> None:
    assert refused(hr, {**BASE, "role": "admin"}) == error(
        "validation_error", "role 'admin' is not defined by version 'v1' of agent 'agent_123'", "role")
    assert refused(hr, {**BASE, "role": "readonly", "preview": True}) == error(
        "validation_error", "role 'readonly' is not defined by version 'v3' of agent 'agent_123'", "role")


def test_an_unknown_agent_is_not_found(hr: HermRunServer) -> None:
    assert refused(hr, {"agentId": "agent_ghost", "subjectId": "u"}, 404) == error(
        "not_found", "agent 'agent_ghost' not found", "agentId")


def test_an_unknown_tag(hr: HermRunServer) -> None:
    assert refused(hr, {**BASE, "tag": "nope"}) == error(
        "validation_error", "tag 'nope' is not a development tag of agent 'agent_123'", "tag")


def test_without_declared_agents_any_agent_has_one_production_v1(bare: HermRunServer) -> None:
    session = bare.create(agentId="whatever", subjectId="u")
    assert (session["agentId"], session["agentVersion"]) == ("whatever", "v1")
    assert bare.create(agentId="whatever", subjectId="u", preview=True)["agentVersion"] == "v1"
    r = bare.client.post("/v1/sessions", json={"agentId": "whatever", "subjectId": "u", "role": "readonly"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "role"
    r = bare.client.post("/v1/sessions", json={"agentId": "whatever", "subjectId": "u", "tag": "t"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "tag"
