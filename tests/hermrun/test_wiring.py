"""The dialect inside the real server: off by default, and test control covering it.

Without `--herm-run` its paths are unknown paths, byte for byte, and the Hermes answers
(CORS included) are the same with it on or off. With it, fixtures, `seed`, reset, the
journal, faults and the control route reach herm-run.db, and state.db keeps upstream's schema.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hermrun.support import KEY, HermRunServer, error, start_herm_run
from tests.support.http import RawAnswer, raw_request
from tests.support.server import RunningServer, clean_env, start_server

pytestmark = pytest.mark.in_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
assert _spec is not None and _spec.loader is not None
make_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fixtures)

BASE = {"agentId": "agent_1", "subjectId": "user_1"}
HERM_RUN_PATHS = ["/v1/sessions", "/v1/sessions/session_0000000000000001",
                  "/v1/sessions/session_0000000000000001/archive", "/v1/sandboxes/warm"]
UNKNOWN = "/v1/no-such-route"
# Announced in Content-Length, never sent: one byte over the server's limit.
OVERSIZED = b"x" * 10_000_001


def _comparable(answer: RawAnswer) -> tuple[int, dict[str, str], bytes]:
    return answer.status, {k: v for k, v in answer.headers.items() if k != "date"}, answer.body


@pytest.fixture(scope="module")
def off(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("off") / "home", "--deterministic", "--cors-origins", "*")
    yield srv
    srv.stop()


@pytest.mark.parametrize("path", HERM_RUN_PATHS)
@pytest.mark.parametrize("method", ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"])
def test_without_the_flag_every_path_answers_like_an_unknown_one(off: RunningServer, path: str, method: str) -> None:
    for headers, body in (({"x-api-key": KEY}, b'{"agentId": "a", "subjectId": "u"}'), ({}, None),
                          ({"Origin": "http://app.example", "Access-Control-Request-Headers": "x-api-key"}, None)):
        ours = raw_request(off, method, path, body, headers)
        unknown = raw_request(off, method, UNKNOWN, body, headers)
        assert _comparable(ours) == _comparable(unknown)
    if method in ("POST", "PUT", "PATCH"):
        big = raw_request(off, method, path, OVERSIZED, announce_only=True)
        assert big.status == 413
        assert _comparable(big) == _comparable(raw_request(off, method, UNKNOWN, OVERSIZED, announce_only=True))


def test_without_the_flag_nothing_of_the_dialect_is_described(off: RunningServer) -> None:
    document = off.client.get("/openapi.json").json()
    assert not [p for p in document["paths"] if p.startswith(("/v1/sessions", "/v1/sandboxes"))]
    assert "hermRunKey" not in document["components"]["securitySchemes"]
    endpoints = off.client.get("/v1/capabilities").json()["endpoints"]
    assert not [name for name in endpoints if name.startswith("herm_run")]
    assert not (off.home / "herm-run.db").exists()


def _hermes_answers(srv: RunningServer) -> list[tuple[int, dict[str, str], bytes]]:
    """A walk over the Hermes routes whose answers must not depend on the dialect."""
    client = srv.client
    client.post("/api/sessions", json={"id": "same", "title": "Same"})
    calls: list[tuple[str, str, Any, dict[str, str]]] = [
        ("GET", "/api/sessions", None, {}), ("GET", "/api/sessions/same", None, {}),
        ("PATCH", "/api/sessions/same", b'{"title": "Other"}', {}), ("GET", "/api/sessions/missing", None, {}),
        ("POST", "/api/sessions", b"{", {}), ("GET", "/health", None, {}), ("GET", UNKNOWN, None, {}),
        ("POST", "/api/sessions", OVERSIZED, {}),
        ("OPTIONS", "/api/sessions", None, {"Origin": "http://app.example"}),
        ("GET", "/api/sessions", None, {"Origin": "http://app.example"}),
    ]
    answers = []
    for method, path, body, headers in calls:
        answer = raw_request(srv, method, path, body, headers, announce_only=body is OVERSIZED)
        answers.append(_comparable(answer))
    return answers


def test_the_hermes_answers_are_the_same_with_the_dialect_on(tmp_path: Path) -> None:
    results = []
    for name, extra in (("off", ()), ("on", ("--herm-run",))):
        srv = start_server(tmp_path / name / "home", "--deterministic", "--cors-origins", "http://app.example", *extra)
        try:
            results.append(_hermes_answers(srv))
        finally:
            srv.stop()
    off_answers, on_answers = results
    # Only the CORS allowed headers differ: a browser may send x-api-key once the dialect is served.
    allowed = "access-control-allow-headers"
    for (s1, h1, b1), (s2, h2, b2) in zip(off_answers, on_answers, strict=True):
        assert (s1, b1) == (s2, b2)
        assert {k: v for k, v in h1.items() if k != allowed} == {k: v for k, v in h2.items() if k != allowed}
        if allowed in h1:
            assert h1[allowed] == "Authorization, Content-Type, Idempotency-Key"
            assert h2[allowed] == "Authorization, Content-Type, Idempotency-Key, x-api-key"


def test_a_state_db_served_with_the_dialect_keeps_upstreams_schema(hr: HermRunServer) -> None:
    hr.create(agentId="agent_123", subjectId="u")
    assert hr.control.post("/api/sessions", json={"id": "hermes-side"}).status_code == 201
    assert make_fixtures.schema_text(hr.home / "state.db") == (FIXTURES / "upstream_schema.sql").read_text(
        encoding="utf-8")


def test_discovery_describes_the_routes_when_served(hr: HermRunServer) -> None:
    document = hr.control.get("/openapi.json").json()
    assert document["components"]["securitySchemes"]["hermRunKey"] == {"type": "apiKey", "in": "header",
                                                                       "name": "x-api-key"}
    create = document["paths"]["/v1/sessions"]["post"]
    assert create["security"] == [{"hermRunKey": []}] and "429" in create["responses"]
    assert document["paths"]["/api/sessions"]["get"]["security"] == [{"bearer": []}]
    endpoints = hr.control.get("/v1/capabilities").json()["endpoints"]
    assert endpoints["herm_run_session_create"] == {"method": "POST", "path": "/v1/sessions"}
    assert endpoints["herm_run_session_archive"] == {"method": "POST", "path": "/v1/sessions/{session_id}/archive"}


def test_the_size_check_answers_in_the_dialects_envelope(hr: HermRunServer) -> None:
    answer = raw_request(hr.server, "POST", "/v1/sessions", OVERSIZED, {"x-api-key": KEY}, announce_only=True)
    assert answer.status == 413 and answer.headers["connection"] == "close"
    assert answer.json() == error("request_too_large", "request body is larger than the server's limit")
    hermes = raw_request(hr.server, "POST", "/api/sessions", OVERSIZED, announce_only=True)
    assert hermes.status == 413 and hermes.json()["error"]["code"] == "body_too_large"


def test_the_environment_switches_it_on_and_a_weak_dialect_key_is_refused(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "env" / "home", env={"HERMES_SERVER_HERM_RUN": "1",
                                                       "HERMES_SERVER_HERM_RUN_ALLOWANCE": "0"})
    try:
        r = srv.client.post("/v1/sessions", json=BASE, headers={"x-api-key": KEY})
        assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limited"
    finally:
        srv.stop()
    done = subprocess.run([sys.executable, "-m", "hermes_server", "serve", "--home", str(tmp_path / "weak"),
                           "--port", "18548", "--api-key", KEY, "--herm-run", "--herm-run-key", "short"],
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode != 0 and "--herm-run-key" in done.stderr


# -- fixtures and seed -------------------------------------------------------------


def test_a_herm_run_fixture_is_refused_without_the_flag(tmp_path: Path) -> None:
    fixture = tmp_path / "f.json"
    fixture.write_text(json.dumps({"herm_run": {"agents": [{"id": "a"}]}}))
    done = subprocess.run([sys.executable, "-m", "hermes_server", "serve", "--home", str(tmp_path / "home"),
                           "--port", "18549", "--api-key", KEY, "--fixture", str(fixture)],
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 2
    assert "$.herm_run: herm.run fixtures need the dialect: serve --herm-run" in done.stderr
    srv = start_server(tmp_path / "api" / "home", "--fixture-api")
    try:
        r = srv.client.post("/_fixture/seed", json={"sessions": [{"id": "kept-out"}], "herm_run": {}})
        assert r.status_code == 400 and "serve --herm-run" in r.json()["error"]["message"]
        assert srv.client.get("/api/sessions/kept-out").status_code == 404
    finally:
        srv.stop()


def test_both_parts_are_checked_before_either_is_written(hr: HermRunServer) -> None:
    bad_dialect = {"sessions": [{"id": "hermes-1"}], "herm_run": {"agents": [{"id": ""}]}}
    r = hr.control.post("/_fixture/seed", json=bad_dialect)
    assert r.status_code == 400 and r.json()["error"]["param"] == "$.herm_run.agents[0].id"
    assert hr.control.get("/api/sessions/hermes-1").status_code == 404
    bad_hermes = {"sessions": [{"id": 5}], "herm_run": {"sessions": [{"id": "hr-1", **BASE}]}}
    assert hr.control.post("/_fixture/seed", json=bad_hermes).status_code == 400
    assert hr.client.get("/v1/sessions/hr-1").status_code == 404
    # A refusal only state.db can see (an id it holds) leaves herm-run.db alone too.
    assert hr.control.post("/api/sessions", json={"id": "taken"}).status_code == 201
    clash = {"sessions": [{"id": "taken"}], "herm_run": {"sessions": [{"id": "hr-2", "agentId": "agent_123",
                                                                        "subjectId": "u"}]}}
    assert hr.control.post("/_fixture/seed", json=clash).status_code == 400
    assert hr.client.get("/v1/sessions/hr-2").status_code == 404
    good = {"sessions": [{"id": "hermes-2"}], "herm_run": {"sessions": [{"id": "hr-3", "agentId": "agent_123",
                                                                          "subjectId": "u"}]}}
    r = hr.control.post("/_fixture/seed", json=good)
    assert r.status_code == 200, r.text
    assert r.json()["herm_run"] == {"agents_written": 0, "sessions_written": 1, "sessions_total": 1}
    assert hr.client.get("/v1/sessions/hr-3").status_code == 200
    assert hr.control.get("/api/sessions/hermes-2").status_code == 200


def test_seed_writes_the_herm_run_part_into_herm_run_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    fixture = tmp_path / "f.json"
    fixture.write_text(json.dumps({"sessions": [{"id": "h1"}], "herm_run": {
        "agents": [{"id": "agent_9", "versions": [{"id": "v7"}]}],
        "sessions": [{"id": "hr-seeded", "agentId": "agent_9", "subjectId": "u", "status": "running"}]}}))
    done = subprocess.run([sys.executable, "-m", "hermes_server", "seed", "--home", str(home), str(fixture)],
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert "herm.run: 1 agent, 1 session into herm-run.db" in done.stdout
    srv = start_herm_run(home)
    try:
        session = srv.client.get("/v1/sessions/hr-seeded").json()
        assert (session["status"], session["agentVersion"]) == ("running", "v7")
        assert srv.client.post("/v1/sessions/hr-seeded/archive").status_code == 409
    finally:
        srv.stop()


def test_reset_restarts_ids_and_empties_the_dialects_data(hr: HermRunServer) -> None:
    first = hr.create(agentId="agent_123", subjectId="u")["id"]
    hr.create(agentId="agent_123", subjectId="u")
    hr.reset()
    assert hr.client.get(f"/v1/sessions/{first}").status_code == 404
    assert hr.create(agentId="agent_123", subjectId="u")["id"] == first == "session_0000000000000001"
    # The start fixture's agents are back: an agent the fixture does not declare is still unknown.
    assert hr.client.post("/v1/sessions", json={"agentId": "nobody", "subjectId": "u"}).status_code == 404
    empty = hr.control.post("/_fixture/reset", json={"to": "empty"}).json()
    assert empty["herm_run"] == {"agents_written": 0, "sessions_written": 0, "sessions_total": 0}
    assert hr.create(agentId="anybody", subjectId="u")["agentVersion"] == "v1"  # no agents declared now


# -- the control route, the journal, faults ----------------------------------------


def test_the_control_route_sets_status_and_usage_and_refuses_nonsense(hr: HermRunServer) -> None:
    sid = hr.create(agentId="agent_123", subjectId="u")["id"]
    r = hr.set_state(sid, status="waiting_on_human", usage={"input_tokens": 3, "context_max": 1000})
    assert r.status_code == 200
    assert (r.json()["status"], r.json()["usage"]["total_tokens"]) == ("waiting_on_human", 3)
    assert hr.client.delete(f"/v1/sessions/{sid}").status_code == 409
    assert hr.set_state("missing", status="idle").status_code == 404
    refused = hr.set_state(sid, status="sleeping")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_state_change"
    assert hr.set_state(sid).status_code == 400
    assert hr.control.post(f"/_fixture/herm-run/sessions/{sid}", json={"status": "idle"},
                           headers={"Authorization": "Bearer wrong-key-0123456789"}).status_code == 401


def test_the_journal_records_the_dialects_requests(hr: HermRunServer) -> None:
    hr.control.delete("/_fixture/requests")
    hr.create(agentId="agent_123", subjectId="u")
    hr.client.get("/v1/sessions")
    entries = hr.control.get("/_fixture/requests", params={"route": "herm_run_sessions"}).json()["data"]
    assert [(e["method"], e["status"]) for e in entries] == [("POST", 201), ("GET", 200)]


def test_a_forced_429_is_in_the_dialects_envelope_with_retry_after(hr: HermRunServer) -> None:
    r = hr.control.put("/_fixture/faults", json={"kind": "status", "status": 429, "route": "herm_run_sessions",
                                                  "method": "POST"})
    assert r.status_code == 200, r.text
    refused = hr.client.post("/v1/sessions", json={"agentId": "agent_123", "subjectId": "u"})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json() == error("rate_limited", "conversation allowance exhausted; retry later")
    assert hr.client.get("/v1/sessions").json()["data"] == []  # nothing was created, and the fault is spent
    named = {"kind": "status", "status": 429, "route": "herm_run_sessions", "headers": {"Retry-After": "30"},
             "message": "slow down", "type": "rate_limited"}
    hr.control.put("/_fixture/faults", json=named)
    refused = hr.client.post("/v1/sessions", json={"agentId": "agent_123", "subjectId": "u"})
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "30")
    assert refused.json() == error("rate_limited", "slow down")


def test_star_faults_leave_the_dialect_alone_and_storage_faults_hit_herm_run_db(hr: HermRunServer) -> None:
    hr.control.put("/_fixture/faults", json={"kind": "status", "status": 503, "route": "*", "times": "always"})
    assert hr.client.get("/v1/sessions").status_code == 200
    assert hr.control.get("/api/sessions").status_code == 503
    hr.control.put("/_fixture/faults", json={"kind": "storage_unavailable", "route": "herm_run_session",
                                              "duration_ms": 60_000})
    hr.client.get("/v1/sessions/anything")
    down = hr.client.get("/v1/sessions")
    assert down.status_code == 503 and down.json()["error"]["type"] == "unavailable"
    assert hr.control.get("/api/sessions").status_code == 200  # state.db is not down
    hr.reset()  # ends the outage
    assert hr.client.get("/v1/sessions").status_code == 200
