"""End-to-end smoke: the README's first request sequence works on a fresh state.db."""

import pytest

from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process


def test_create_list_get_delete(fresh_server: RunningServer) -> None:
    c = fresh_server.client
    created = c.post("/api/sessions", json={"id": "smoke", "title": "Smoke"})
    assert created.status_code == 201
    assert created.json()["session"]["title"] == "Smoke"
    listed = c.get("/api/sessions").json()
    assert [row["id"] for row in listed["data"]] == ["smoke"]
    assert c.get("/api/sessions/smoke").json()["session"]["id"] == "smoke"
    assert c.delete("/api/sessions/smoke").json() == {"object": "hermes.session.deleted", "id": "smoke", "deleted": True}
    assert c.get("/api/sessions/smoke").status_code == 404


def test_health_needs_no_key(fresh_server: RunningServer) -> None:
    import httpx

    r = httpx.get(fresh_server.url + "/health")
    assert r.json() == {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}
    assert r.headers["content-type"] == "application/json; charset=utf-8"
