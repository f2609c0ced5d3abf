"""POST /v1/sandboxes/warm, and the x-api-key header on every route."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.hermrun.support import KEY, HermRunServer, error, start_herm_run

pytestmark = pytest.mark.in_process

BASE = {"agentId": "agent_123", "subjectId": "user_123"}
WARMED = {"object": "sandbox.warm", "status": "warming", "reason": None, "agentId": "agent_123",
          "subjectId": "user_123"}
ROUTES = [("GET", "/v1/sessions"), ("POST", "/v1/sessions"), ("GET", "/v1/sessions/s"), ("POST", "/v1/sessions/s"),
          ("DELETE", "/v1/sessions/s"), ("POST", "/v1/sessions/s/archive"), ("POST", "/v1/sandboxes/warm")]
UNAUTHORIZED = error("unauthorized", "missing or invalid x-api-key header")


def test_warm_is_accepted_idempotent_and_creates_nothing(hr: HermRunServer) -> None:
    for _ in range(3):
        r = hr.client.post("/v1/sandboxes/warm", json=BASE)
        assert (r.status_code, r.json()) == (202, WARMED)
    assert hr.client.get("/v1/sessions").json()["data"] == []


@pytest.mark.parametrize("body, message, param", [
    ({"subjectId": "u"}, "agentId is required", "agentId"),
    ({"agentId": "agent_123"}, "subjectId is required", "subjectId"),
    ({"agentId": "", "subjectId": "u"}, "agentId must not be empty", "agentId"),
    ({"agentId": "agent_123", "subjectId": " "}, "subjectId must not be empty", "subjectId"),
])
def test_warm_needs_both_ids(hr: HermRunServer, body: dict[str, str], message: str, param: str) -> None:
    r = hr.client.post("/v1/sandboxes/warm", json=body)
    assert (r.status_code, r.json()) == (400, error("validation_error", message, param))


def test_warm_an_unknown_agent(hr: HermRunServer, bare: HermRunServer) -> None:
    r = hr.client.post("/v1/sandboxes/warm", json={"agentId": "agent_ghost", "subjectId": "u"})
    assert (r.status_code, r.json()) == (404, error("not_found", "agent 'agent_ghost' not found", "agentId"))
    assert bare.client.post("/v1/sandboxes/warm", json={"agentId": "agent_ghost", "subjectId": "u"}).status_code == 202


@pytest.mark.parametrize("headers", [{}, {"x-api-key": "wrong"}, {"x-api-key": ""},
                                     {"Authorization": f"Bearer {KEY}"}, {"x-api-key": KEY + " x"}])
def test_a_missing_or_wrong_key_is_401_before_anything_else(hr: HermRunServer, headers: dict[str, str]) -> None:
    with httpx.Client(base_url=hr.url, headers=headers) as client:
        for method, path in ROUTES:
            r = client.request(method, path, content=b"{")  # an invalid body is not even read
            assert (r.status_code, r.json()) == (401, UNAUTHORIZED), (method, path)


def test_a_non_utf8_key_is_a_wrong_key(hr: HermRunServer) -> None:
    with httpx.Client(base_url=hr.url) as client:
        r = client.get("/v1/sessions", headers={"x-api-key": b"\xff\xfe"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_a_separate_herm_run_key(tmp_path: Path) -> None:
    srv = start_herm_run(tmp_path / "home", "--herm-run-key", "hr-key-0123456789", api_key_header="hr-key-0123456789")
    try:
        assert srv.client.get("/v1/sessions").status_code == 200
        r = srv.client.get("/v1/sessions", headers={"x-api-key": KEY})
        assert (r.status_code, r.json()) == (401, UNAUTHORIZED)
    finally:
        srv.stop()


def test_no_key_configured_means_open(tmp_path: Path) -> None:
    srv = start_herm_run(tmp_path / "home", key=None)
    try:
        assert srv.client.get("/v1/sessions").status_code == 200
    finally:
        srv.stop()
