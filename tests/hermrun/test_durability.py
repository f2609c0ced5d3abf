"""herm-run.db across restarts, and bad input on every route: never a 5xx, never a lost session."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.hermrun.support import HermRunServer, start_herm_run

pytestmark = pytest.mark.slow

BASE = {"agentId": "agent_123", "subjectId": "user_1"}


def test_a_restart_keeps_sessions_and_ids_never_repeat(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = start_herm_run(home, "--deterministic")
    try:
        made = [first.create(**BASE)["id"] for _ in range(3)]
        first.client.delete(f"/v1/sessions/{made[2]}")
        kept = first.client.get(f"/v1/sessions/{made[0]}").json()
    finally:
        first.stop()
    second = start_herm_run(home, "--deterministic")
    try:
        assert second.client.get(f"/v1/sessions/{made[0]}").json() == kept
        new = second.create(**{**BASE, "subjectId": "user_2"})["id"]
        assert new not in made and new == "session_0000000000000004"
    finally:
        second.stop()


def test_state_db_is_not_created_or_touched(tmp_path: Path) -> None:
    srv = start_herm_run(tmp_path / "home")
    try:
        srv.create(**BASE)
    finally:
        srv.stop()
    assert not (tmp_path / "home" / "state.db").exists()
    with sqlite3.connect(tmp_path / "home" / "herm-run.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


BODIES = [
    b"", b"null", b"[]", b'"x"', b"1", b"{", b"\xff\xfe{}", b"\xef\xbb\xbf{}", b"[" * 100_000 + b"]" * 100_000,
    b'{"a": ' * 50_000 + b"1" + b"}" * 50_000, b'{"agentId": NaN, "subjectId": Infinity}',
    b'{"agentId": 1e999, "subjectId": 123456789012345678901234567890}',
    b'{"agentId": "\\ud800", "subjectId": "u"}', b'{"agentId": "a\\u0000b", "subjectId": "u"}',
    b'{"agentId": "agent_123", "subjectId": "u", "metadata": {"\\udfff": "v"}}',
    b'{"agentId": "agent_123", "subjectId": "u", "title": "\\ud800\\udc00\\ud800"}',
    b'{"agentId": {"x": 1}, "subjectId": ["u"]}', b'{"title": "' + b"t" * 5000 + b'"}',
    b'{"agentId": "agent_123", "subjectId": "u", "role": ["readonly"], "tag": {}}',
    b'{"metadata": null, "yoloMode": null, "title": null}', b'{"metadata": {"k": null}}',
    json.dumps({f"k{i}": i for i in range(1000)}).encode(),
]
PATHS = ["missing", "%00", "a%0Ab", "%FF%FE", "%zz", "%", "a%2Fb", "..", "%ED%A0%80", "x" * 5000, "%F0%9F%98%80"]
QUERIES = ["limit=%00", "limit=99999999999999999999999", "offset=99999999999999999999999999999", "agentId=%FF",
           "status=%ED%A0%80", "agent=a&agent=b", "agentId=&agent=", "limit=1&limit=x", "%zz=%zz", "&&&=",
           "subjectId=" + "s" * 5000]


@pytest.fixture(scope="module")
def target(declared: HermRunServer) -> tuple[HermRunServer, dict]:
    declared.reset()
    return declared, declared.create(**BASE)


def _no_5xx(srv: HermRunServer, method: str, path: str, body: bytes | None = None) -> None:
    r = srv.client.request(method, path, content=body)
    assert r.status_code < 500, (method, path, body[:80] if body else None, r.status_code, r.text)
    if r.headers.get("content-type") == "application/json":  # else the router's text/plain 404 or 405
        body = r.json()
        assert "error" in body or "object" in body, body


def test_bad_bodies(target: tuple[HermRunServer, dict]) -> None:
    srv, session = target
    for path in ("/v1/sessions", f"/v1/sessions/{session['id']}", f"/v1/sessions/{session['id']}/archive",
                 "/v1/sandboxes/warm"):
        for body in BODIES:
            _no_5xx(srv, "POST", path, body)
    assert srv.client.get(f"/v1/sessions/{session['id']}").status_code == 200


def test_bad_paths_and_queries(target: tuple[HermRunServer, dict]) -> None:
    srv, session = target
    for segment in PATHS:
        for method, tail in (("GET", ""), ("POST", ""), ("DELETE", ""), ("POST", "/archive")):
            _no_5xx(srv, method, f"/v1/sessions/{segment}{tail}", b'{"title": "t"}')
    for query in QUERIES:
        _no_5xx(srv, "GET", f"/v1/sessions?{query}")
    assert srv.client.get(f"/v1/sessions/{session['id']}").status_code == 200
    assert "Traceback" not in srv.log()


def test_a_body_over_the_limit(target: tuple[HermRunServer, dict]) -> None:
    srv, _ = target

    def chunks():
        yield b'{"agentId": "'
        for _ in range(11):
            yield b"a" * 1_000_000
    r = srv.client.post("/v1/sessions", content=chunks())
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"
