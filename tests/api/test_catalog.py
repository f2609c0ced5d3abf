"""/v1/skills, /v1/toolsets, platform events and cron fire, each as 0.19.0 answers them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.http import create_session
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TOOLSETS = Path(__file__).resolve().parents[2] / "hermes_server" / "data" / "toolsets-0.19.0.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    home = tmp_path_factory.mktemp("catalog") / "hermes"
    files = {
        "testcat/alpha/SKILL.md": "---\nname: alpha-skill\ndescription: Does alpha things\n---\n# Alpha\n",
        "beta/SKILL.md": "# Beta\n\nFirst body line of beta.\n",
        "beta/references/inner/SKILL.md": "---\nname: not-a-skill\n---\n",
        ".git/x/SKILL.md": "---\nname: hidden\n---\n",
        "long/SKILL.md": "---\nname: long\n---\n" + "d" * 1100 + "\n",
        "other-os/SKILL.md": "---\nname: mac-only\nplatforms: [windows]\n---\nbody\n",
        "bom/SKILL.md": "\ufeff---\nname: \"quoted: yes\"\ndescription: >-\n  folded\n  text\n---\n",
    }
    for name, text in files.items():
        (home / "skills" / name).parent.mkdir(parents=True, exist_ok=True)
        (home / "skills" / name).write_text(text)
    srv = start_server(home)
    yield srv
    srv.stop()


def test_skills(server: RunningServer) -> None:
    response = server.client.get("/v1/skills")
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["object", "data"] and body["object"] == "list"
    assert body["data"][:1] == [{"name": "beta", "description": "First body line of beta.", "category": None}]
    long = next(s for s in body["data"] if s["name"] == "long")
    assert len(long["description"]) == 1024 and long["description"].endswith("...")
    assert body["data"][-1] == {"name": "alpha-skill", "description": "Does alpha things", "category": "testcat"}
    assert [s["name"] for s in body["data"]] == ["beta", "long", "quoted: yes", "alpha-skill"]
    assert body["data"][2]["description"] == "folded text"  # front matter is YAML
    assert server.client.get("/v1/skills", headers={"Authorization": "Bearer x"}).status_code == 401


def test_skills_on_a_fresh_home(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes")
    try:
        assert srv.client.get("/v1/skills").json() == {"object": "list", "data": []}
    finally:
        srv.stop()


def test_toolsets_change_after_the_first_turn(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes")
    try:
        before = srv.client.get("/v1/toolsets")
        assert before.status_code == 200
        assert before.content == json.dumps(json.loads(TOOLSETS.read_text())).encode()
        assert srv.client.get("/p/someone/v1/toolsets").content == before.content
        create_session(srv, "S")
        assert srv.client.post("/api/sessions/S/chat", json={"message": "hi"}).status_code == 200
        after = srv.client.get("/v1/toolsets").json()
        terminal = next(t for t in after["data"] if t["name"] == "terminal")
        assert terminal["tools"] == ["close_terminal", "process", "read_terminal", "terminal"]
        assert [t for t in after["data"] if t["name"] != "terminal"] == [
            t for t in before.json()["data"] if t["name"] != "terminal"]
    finally:
        srv.stop()


@pytest.mark.parametrize("platform", ["telegram", "Google-Chat", "a_b"])
def test_platform_events_without_adapters(server: RunningServer, platform: str) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}):
        response = server.client.post(f"/api/platforms/{platform}/events", content=b"not json",
                                      headers=headers)
        assert response.status_code == 503
        assert response.json() == {"error": {"message": "Platform adapter is not connected",
                                             "type": "invalid_request_error", "param": None,
                                             "code": "platform_unavailable"}}


def test_platform_name_checked_first(server: RunningServer) -> None:
    response = server.client.post("/api/platforms/tele.gram/events")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_platform"
    assert server.client.get("/api/platforms/telegram/events").headers["allow"] == "POST"


def test_cron_fire_refuses_every_token(server: RunningServer) -> None:
    for headers in ({}, {"Authorization": "Bearer eyJ.junk.jwt"}):
        response = server.client.post("/api/cron/fire", json={"job_id": "x"}, headers=headers)
        assert (response.status_code, response.json()) == (401, {"error": "invalid fire token"})
    assert server.client.post("/api/cron/fire").status_code == 401  # with the API key too
