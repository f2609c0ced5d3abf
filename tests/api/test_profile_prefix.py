"""`/p/{profile}/…`: upstream mounts every route again under a profile prefix and, with
profile multiplexing off, ignores the profile. Answers recorded from the 0.19.0 oracle."""

from __future__ import annotations

import pytest

from tests.support.http import error
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process


def test_prefixed_routes_answer_like_the_plain_ones(server: RunningServer) -> None:
    c = server.client
    assert c.post("/p/any/api/sessions", json={"id": "pp-1"}).status_code == 201
    assert c.get("/p/any/api/sessions/pp-1").json()["session"]["id"] == "pp-1"
    assert c.get("/p/other/api/sessions/pp-1").json() == c.get("/api/sessions/pp-1").json()
    assert c.get("/p/a%2Fb/api/sessions").status_code == 200
    assert c.get("/p/x/health").json() == {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}
    missing = c.get("/p/x/api/sessions/NOPE")
    assert missing.status_code == 404
    assert missing.json() == error("session_not_found", "Session not found: NOPE")


def test_prefixed_wrong_method_is_the_same_405(server: RunningServer) -> None:
    r = server.client.put("/p/x/api/sessions/anything")
    assert r.status_code == 405
    assert r.headers["allow"] == "DELETE,GET,PATCH"
    assert r.text == "405: Method Not Allowed"


@pytest.mark.parametrize("path", ["/p/x", "/p//api/sessions", "/p/x/y/api/sessions", "/p/x/p/y/api/sessions",
                                  "/p/%7Bx%7D/api/sessions"])
def test_only_one_non_empty_profile_segment_is_stripped(server: RunningServer, path: str) -> None:
    r = server.client.get(path)
    assert r.status_code == 404
    assert r.text == "404: Not Found"
