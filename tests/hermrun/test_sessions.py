"""Statuses, list, get, update, archive and delete of herm.run sessions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.hermrun.support import HermRunServer, error

pytestmark = pytest.mark.in_process

BASE = {"agentId": "agent_123", "subjectId": "user_1"}


def ids(r: Any) -> list[str]:
    assert r.status_code == 200, r.text
    return [s["id"] for s in r.json()["data"]]


def running(hr: HermRunServer, status: str = "running", **body: Any) -> dict[str, Any]:
    session = hr.create(**{**BASE, **body})
    r = hr.set_state(session["id"], status=status)
    assert r.status_code == 200 and r.json()["status"] == status, r.text
    return r.json()


# -- statuses -------------------------------------------------------------------


def test_every_status_is_shown(hr: HermRunServer) -> None:
    session = hr.create(**BASE)
    assert session["status"] == "idle"
    for status in ("running", "waiting_on_human", "archived", "idle"):
        hr.set_state(session["id"], status=status)
        assert hr.client.get(f"/v1/sessions/{session['id']}").json()["status"] == status


# -- list -------------------------------------------------------------------------


def test_list_envelope_newest_first(hr: HermRunServer) -> None:
    made = [hr.create(**BASE)["id"] for _ in range(3)]
    r = hr.client.get("/v1/sessions")
    body = r.json()
    assert {k: v for k, v in body.items() if k != "data"} == {"object": "list", "limit": 50, "offset": 0,
                                                               "hasMore": False}
    assert ids(r) == made[::-1]
    assert body["data"][0] == hr.client.get(f"/v1/sessions/{made[2]}").json()


def test_filters_and_their_aliases(hr: HermRunServer) -> None:
    a = hr.create(**BASE)["id"]
    b = hr.create(agentId="agent_123", subjectId="user_2")["id"]
    c = hr.create(agentId="agent_other", subjectId="user_1")["id"]
    assert ids(hr.client.get("/v1/sessions", params={"agentId": "agent_123"})) == [b, a]
    assert ids(hr.client.get("/v1/sessions", params={"agent": "agent_123"})) == [b, a]
    assert ids(hr.client.get("/v1/sessions", params={"subjectId": "user_1"})) == [c, a]
    assert ids(hr.client.get("/v1/sessions", params={"subject": "user_1"})) == [c, a]
    assert ids(hr.client.get("/v1/sessions", params={"agent": "agent_123", "agentId": "agent_123",
                                                      "subject": "user_2", "subjectId": "user_2"})) == [b]


@pytest.mark.parametrize("params, message, param", [
    ({"agentId": "agent_123", "agent": "agent_other"}, "agent and agentId must match when both are given", "agent"),
    ({"subjectId": "a", "subject": "b"}, "subject and subjectId must match when both are given", "subject"),
    ({"status": "waiting_on_human"},
     "status waiting_on_human is not accepted as a list filter; use idle, running or archived", "status"),
    ({"status": "busy"}, "status must be one of idle, running, archived", "status"),
    ({"limit": "0"}, "limit must be an integer from 1 to 100", "limit"),
    ({"limit": "101"}, "limit must be an integer from 1 to 100", "limit"),
    ({"limit": "ten"}, "limit must be an integer from 1 to 100", "limit"),
    ({"offset": "-1"}, "offset must be a non-negative integer", "offset"),
    ({"offset": "1.5"}, "offset must be a non-negative integer", "offset"),
])
def test_bad_list_queries(hr: HermRunServer, params: dict[str, str], message: str, param: str) -> None:
    r = hr.client.get("/v1/sessions", params=params)
    assert (r.status_code, r.json()) == (400, error("validation_error", message, param))


def test_status_filter_and_archived_rows(hr: HermRunServer) -> None:
    idle = hr.create(**BASE)["id"]
    run = running(hr)["id"]
    waiting = running(hr, "waiting_on_human")["id"]
    archived = hr.create(**BASE)["id"]
    assert hr.client.post(f"/v1/sessions/{archived}/archive").status_code == 200
    assert ids(hr.client.get("/v1/sessions")) == [waiting, run, idle]
    assert ids(hr.client.get("/v1/sessions", params={"status": "idle"})) == [idle]
    assert ids(hr.client.get("/v1/sessions", params={"status": "running"})) == [run]
    assert ids(hr.client.get("/v1/sessions", params={"status": "archived"})) == [archived]


def test_limit_offset_and_has_more(hr: HermRunServer) -> None:
    made = [hr.create(agentId="agent_123", subjectId=f"u{i}")["id"] for i in range(55)][::-1]
    assert ids(hr.client.get("/v1/sessions")) == made[:50]
    assert hr.client.get("/v1/sessions").json()["hasMore"] is True
    page = hr.client.get("/v1/sessions", params={"limit": "20", "offset": "40"}).json()
    assert [s["id"] for s in page["data"]] == made[40:55]
    assert (page["limit"], page["offset"], page["hasMore"]) == (20, 40, False)
    assert ids(hr.client.get("/v1/sessions", params={"limit": "100"})) == made
    assert ids(hr.client.get("/v1/sessions", params={"offset": "1000000000000000000000"})) == []


# -- get ----------------------------------------------------------------------------


def test_get_shows_the_usage_snapshot_once_a_turn_completed(hr: HermRunServer) -> None:
    session = hr.create(**BASE, metadata={"k": "v"})
    assert session["usage"] is None
    usage = {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 10, "model_calls": 2,
             "estimated_cost_usd": 0.0042, "context_max": 200000}
    assert hr.set_state(session["id"], usage=usage).status_code == 200
    got = hr.client.get(f"/v1/sessions/{session['id']}").json()
    assert got["usage"] == {"input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 10,
                            "cache_write_tokens": 0, "reasoning_tokens": 0, "total_tokens": 150, "model_calls": 2,
                            "estimated_cost_usd": 0.0042, "context_max": 200000}
    assert (got["agentVersion"], got["metadata"], got["createdAt"]) == ("v1", {"k": "v"}, session["createdAt"])


def test_an_unknown_session_is_not_found(hr: HermRunServer) -> None:
    for method, path in (("GET", ""), ("POST", ""), ("DELETE", ""), ("POST", "/archive")):
        r = hr.client.request(method, f"/v1/sessions/session_missing{path}", json={"title": "t"})
        assert (r.status_code, r.json()) == (404, error("not_found", "session 'session_missing' not found"))


def test_fixture_sessions_are_served(hr: HermRunServer) -> None:
    assert hr.seed({"sessions": [{
        "id": "session_fx", "agentId": "agent_123", "subjectId": "user_9", "status": "waiting_on_human",
        "title": "From a fixture", "agentVersion": "v2", "metadata": {"a": "b"}, "usage": {"model_calls": 1},
        "createdAt": "2031-02-03T04:05:06Z"}]}).status_code == 200
    got = hr.client.get("/v1/sessions/session_fx").json()
    assert (got["status"], got["agentVersion"], got["title"], got["createdAt"], got["usage"]["model_calls"]) == (
        "waiting_on_human", "v2", "From a fixture", "2031-02-03T04:05:06.000Z", 1)


# -- update ----------------------------------------------------------------------


def test_update_title_yolo_mode_and_metadata(hr: HermRunServer) -> None:
    session = hr.create(**BASE, metadata={"old": "x", "keep": "no"})
    hr.clock(advance=5)
    r = hr.client.post(f"/v1/sessions/{session['id']}", json={"title": "Q3 holiday campaign", "yoloMode": True,
                                                               "metadata": {"campaign": "holiday"}})
    assert r.status_code == 200
    updated = r.json()
    assert (updated["title"], updated["yoloMode"], updated["metadata"]) == (
        "Q3 holiday campaign", True, {"campaign": "holiday"})
    assert updated["updatedAt"] > session["updatedAt"] and updated["createdAt"] == session["createdAt"]
    only_yolo = hr.client.post(f"/v1/sessions/{session['id']}", json={"yoloMode": False}).json()
    assert (only_yolo["title"], only_yolo["yoloMode"], only_yolo["metadata"]) == (
        "Q3 holiday campaign", False, {"campaign": "holiday"})
    assert hr.client.get(f"/v1/sessions/{session['id']}").json() == only_yolo


@pytest.mark.parametrize("body, message, param", [
    ({}, "at least one of title, yoloMode or metadata is required", None),
    ({"title": None}, "at least one of title, yoloMode or metadata is required", None),
    ({"status": "idle"}, "at least one of title, yoloMode or metadata is required", None),
    ({"title": 5}, "title must be a string", "title"),
    ({"yoloMode": "true"}, "yoloMode must be a boolean", "yoloMode"),
    ({"metadata": "x"}, "metadata must be an object", "metadata"),
])
def test_bad_updates(hr: HermRunServer, body: dict[str, Any], message: str, param: str | None) -> None:
    session = hr.create(**BASE)
    r = hr.client.post(f"/v1/sessions/{session['id']}", json=body)
    assert (r.status_code, r.json()) == (400, error("validation_error", message, param))
    assert hr.client.get(f"/v1/sessions/{session['id']}").json() == session


def test_a_running_session_can_be_updated(hr: HermRunServer) -> None:
    session = running(hr)
    r = hr.client.post(f"/v1/sessions/{session['id']}", json={"title": "Set while running"})
    assert r.status_code == 200 and r.json()["title"] == "Set while running" and r.json()["status"] == "running"


# -- archive and delete -----------------------------------------------------------


def test_archive_an_idle_session(hr: HermRunServer) -> None:
    session = hr.create(**BASE)
    r = hr.client.post(f"/v1/sessions/{session['id']}/archive")
    assert r.status_code == 200 and r.json()["status"] == "archived"
    assert session["id"] not in ids(hr.client.get("/v1/sessions"))
    again = hr.client.post(f"/v1/sessions/{session['id']}/archive")
    assert again.status_code == 200 and again.content == r.content


@pytest.mark.parametrize("status", ["running", "waiting_on_human"])
def test_active_sessions_cannot_be_archived_or_deleted(hr: HermRunServer, status: str) -> None:
    session = running(hr, status)
    sid = session["id"]
    for method, path, action in (("POST", "/archive", "archived"), ("DELETE", "", "deleted")):
        r = hr.client.request(method, f"/v1/sessions/{sid}{path}")
        assert (r.status_code, r.json()) == (409, error(
            "invalid_state", f"session '{sid}' is {status}; it cannot be {action} while a turn is active"))
    assert hr.client.get(f"/v1/sessions/{sid}").json() == session


@pytest.mark.parametrize("archive_first", [False, True])
def test_delete_an_inactive_session(hr: HermRunServer, archive_first: bool) -> None:
    sid = hr.create(**BASE)["id"]
    if archive_first:
        hr.client.post(f"/v1/sessions/{sid}/archive")
    r = hr.client.delete(f"/v1/sessions/{sid}")
    assert r.status_code == 200
    assert r.json() == {"object": "agent.session_deleted", "id": sid, "deleted": True}
    assert hr.client.get(f"/v1/sessions/{sid}").status_code == 404
    assert sid not in ids(hr.client.get("/v1/sessions", params={"status": "archived"}))


def test_ids_are_path_segments(hr: HermRunServer) -> None:
    assert hr.seed({"sessions": [{"id": "a/b é", "agentId": "agent_123", "subjectId": "u"}]}).status_code == 200
    r = hr.client.get("/v1/sessions/a%2Fb%20%C3%A9")
    assert r.status_code == 200 and r.json()["id"] == "a/b é"
    assert hr.client.request("PUT", "/v1/sessions/x").headers["allow"] == "DELETE,GET,POST"
