"""The audit (issue 21), over HTTP on the real server: for every rule, the wrong sequence is
reported (rule id, severity, the journal seqs that show it) and the careful sequence doing the
same work is clean. Faults produce the uncertain outcomes (503, a dropped connection)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import KEY, RunningServer, clean_env, start_server

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

TRANSPORT_ERRORS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
CASE = {"id": "case", "title": "Case", "messages": [{"role": "user", "content": "q"},
                                                    {"role": "assistant", "content": "a"}]}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("audit") / "home", "--fixture-api")
    yield srv
    srv.stop()


def prepare(srv: RunningServer, *faults: dict[str, Any], sessions: tuple[dict[str, Any], ...] = (CASE,)) -> httpx.Client:
    """Empty state with `sessions`, `faults` armed, an empty journal: seqs start at 1."""
    c = srv.client
    assert c.post("/_fixture/reset", json={"to": "empty"}).status_code == 200
    if sessions:
        assert c.post("/_fixture/seed", json={"sessions": list(sessions)}).status_code == 200
    if faults:
        assert c.put("/_fixture/faults", json={"faults": list(faults)}).status_code == 200
    assert c.delete("/_fixture/requests").status_code == 200
    return c


def lost(send: Any, *args: Any, **kwargs: Any) -> None:
    """A call whose connection the server drops."""
    with pytest.raises(TRANSPORT_ERRORS):
        send(*args, **kwargs)


def findings(c: httpx.Client) -> list[dict[str, Any]]:
    r = c.get("/_fixture/audit")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "hermes_server.audit" and set(body) == {"object", "checked", "findings"}
    for finding in body["findings"]:
        assert set(finding) == {"rule", "severity", "message", "requests", "session_id"}
    return body["findings"]


def only(c: httpx.Client, rule: str, severity: str, requests: list[int], session_id: str | None = "case") -> str:
    """The audit holds exactly one finding, this one; its message is returned."""
    found = findings(c)
    assert [(f["rule"], f["severity"], f["requests"], f["session_id"]) for f in found] == \
        [(rule, severity, requests, session_id)], found
    return found[0]["message"]


def clean(c: httpx.Client) -> None:
    assert findings(c) == []


# -- the route itself ------------------------------------------------------------------

def test_audit_counts_the_journal_since_it_was_emptied_and_needs_the_key(srv: RunningServer) -> None:
    c = prepare(srv)
    c.get("/api/sessions/case")
    c.get("/api/sessions")
    assert c.get("/_fixture/audit").json() == {"object": "hermes_server.audit", "checked": 2, "findings": []}
    assert httpx.get(f"{srv.url}/_fixture/audit").status_code == 401
    c.delete("/_fixture/requests")
    assert c.get("/_fixture/audit").json()["checked"] == 0


def test_journal_entries_carry_what_the_rules_read(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "sessions_list", "kind": "status", "status": 503, "retry_after": 2})
    c.get("/api/sessions")
    entry = c.get("/_fixture/requests").json()["data"][0]
    assert entry["retry_after"] == "2" and entry["credential"] is True and entry["idempotency_key"] is False
    assert isinstance(entry["clock"], float) and entry["answered_session_id"] is None


# -- unsafe-replay ---------------------------------------------------------------------

def test_unsafe_replay_of_a_lost_chat(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_chat", "kind": "connection_reset", "when": "after", "times": 2})
    lost(c.post, "/api/sessions/case/chat", json={"message": "Summarize"})
    lost(c.post, "/api/sessions/case/chat", json={"message": "Summarize"})
    assert "reconcile first" in only(c, "unsafe-replay", "error", [1, 2])


def test_reconciling_a_lost_chat_is_clean(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_chat", "kind": "connection_reset", "when": "after"})
    lost(c.post, "/api/sessions/case/chat", json={"message": "Summarize"})
    assert c.get("/api/sessions/case/messages").json()["data"][-1]["role"] == "assistant"
    clean(c)


def test_unsafe_replay_of_a_create_that_got_a_5xx(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_create", "kind": "status", "status": 500}, sessions=())
    assert c.post("/api/sessions", json={"id": "new"}).status_code == 500
    assert c.post("/api/sessions", json={"id": "new"}).status_code == 201
    only(c, "unsafe-replay", "error", [1, 2], "new")


def test_a_create_retried_after_reading_its_id_is_clean(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_create", "kind": "connection_reset", "when": "after"}, sessions=())
    lost(c.post, "/api/sessions", json={"id": "new"})
    assert c.get("/api/sessions/new").status_code == 200
    assert c.post("/api/sessions", json={"id": "new"}).status_code == 409  # the documented proof it exists
    clean(c)


# -- stale-session-id ------------------------------------------------------------------

@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("audit-rotating") / "home", "--fixture-api",
                       "--compress-after-messages", "5")
    yield srv
    srv.stop()


LONG = {"id": "case", "title": "Case", "messages": [
    {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
    {"role": "user", "content": "three"}, {"role": "assistant", "content": "four"}]}


def test_a_turn_on_the_id_compression_retired_is_reported(rotating: RunningServer) -> None:
    c = prepare(rotating, sessions=(LONG,))
    tip = c.post("/api/sessions/case/chat", json={"message": "five"}).json()["session_id"]
    assert tip != "case"
    c.get("/api/sessions/case/messages")  # reading the old id is fine
    c.post("/api/sessions/case/chat", json={"message": "six"})
    assert repr(tip) in only(c, "stale-session-id", "error", [1, 3])


def test_following_the_returned_id_is_clean(rotating: RunningServer) -> None:
    c = prepare(rotating, sessions=(LONG,))
    tip = c.post("/api/sessions/case/chat", json={"message": "five"}).headers["X-Hermes-Session-Id"]
    assert c.post(f"/api/sessions/{tip}/chat", json={"message": "six"}).status_code == 200
    assert c.post(f"/api/sessions/{tip}/fork", json={"id": "alt"}).status_code == 201
    clean(c)


# -- fork-retry-without-inspection -----------------------------------------------------

def test_forking_again_after_a_torn_fork_is_reported(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_fork", "kind": "fork_interrupted", "after_step": 3})
    lost(c.post, "/api/sessions/case/fork", json={"id": "case-alt"})
    c.get("/api/sessions/case")  # the source only: the child was not looked at
    c.post("/api/sessions/case/fork", json={"id": "case-alt-2"})
    only(c, "fork-retry-without-inspection", "error", [1, 3])


def test_inspecting_source_and_child_before_forking_again_is_clean(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_fork", "kind": "fork_interrupted", "after_step": 1})
    lost(c.post, "/api/sessions/case/fork", json={"id": "case-alt"})
    assert c.get("/api/sessions/case").json()["session"]["end_reason"] == "branched"
    assert c.get("/api/sessions/case-alt").status_code == 404  # step 1 only: no child yet
    assert c.post("/api/sessions/case/fork", json={"id": "case-alt"}).status_code == 201
    clean(c)


# -- control-character-id --------------------------------------------------------------

def test_an_id_with_a_line_feed_is_reported(srv: RunningServer) -> None:
    c = prepare(srv)
    c.get("/api/sessions/case%0Aevil")
    c.post("/api/sessions", json={"id": "x\r\ny"})
    found = findings(c)
    assert [(f["rule"], f["severity"], f["requests"]) for f in found] == \
        [("control-character-id", "error", [1]), ("control-character-id", "error", [2])]


def test_refusing_such_an_id_before_sending_is_clean(srv: RunningServer) -> None:
    c = prepare(srv)
    c.get("/api/sessions/case")
    c.post("/api/sessions", json={"id": "x-y"})
    clean(c)


# -- retry-after-ignored ---------------------------------------------------------------

def test_retrying_sooner_than_retry_after_is_reported(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "sessions_list", "kind": "status", "status": 503, "retry_after": 2})
    c.post("/_fixture/clock", json={})  # manual: only the control API moves it
    r = c.get("/api/sessions")
    assert (r.status_code, r.headers["Retry-After"]) == (503, "2")
    c.post("/_fixture/clock", json={"advance": 1})
    assert c.get("/api/sessions").status_code == 200
    assert "Retry-After: 2" in only(c, "retry-after-ignored", "error", [1, 2], None)


def test_waiting_as_long_as_retry_after_says_is_clean(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "sessions_list", "kind": "status", "status": 429})
    c.post("/_fixture/clock", json={})
    r = c.get("/api/sessions")
    assert (r.status_code, r.headers["Retry-After"]) == (429, "1")
    c.post("/_fixture/clock", json={"advance": 1})
    assert c.get("/api/sessions").status_code == 200
    clean(c)


def test_a_503_retried_at_once_is_both_an_unsafe_replay_and_too_soon(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "session_create", "kind": "status", "status": 503}, sessions=())
    c.post("/_fixture/clock", json={})
    c.post("/api/sessions", json={"id": "new"})
    c.post("/api/sessions", json={"id": "new"})
    assert [(f["rule"], f["requests"]) for f in findings(c)] == \
        [("retry-after-ignored", [1, 2]), ("unsafe-replay", [1, 2])]


# -- zero-limit-list, page-past-end ----------------------------------------------------

def test_a_list_with_limit_zero_is_reported(srv: RunningServer) -> None:
    c = prepare(srv)
    c.get("/api/sessions", params={"limit": 0})
    only(c, "zero-limit-list", "warning", [1], None)


def test_a_positive_limit_is_clean(srv: RunningServer) -> None:
    c = prepare(srv)
    c.get("/api/sessions", params={"limit": 10})
    clean(c)


THREE = tuple({"id": f"s{i}"} for i in range(3))


def test_asking_for_the_page_after_a_short_one_is_reported(srv: RunningServer) -> None:
    c = prepare(srv, sessions=THREE)
    for offset in (0, 2, 4):
        c.get("/api/sessions", params={"limit": 2, "offset": offset})
    only(c, "page-past-end", "warning", [2, 3], None)


def test_stopping_at_the_short_page_is_clean(srv: RunningServer) -> None:
    c = prepare(srv, sessions=THREE)
    offset = 0
    while True:
        page = c.get("/api/sessions", params={"limit": 2, "offset": offset}).json()
        offset += 2
        if len(page["data"]) < 2:
            break
    clean(c)


# -- the extra rules -------------------------------------------------------------------

def test_a_chat_on_a_session_the_connector_closed_is_reported(srv: RunningServer) -> None:
    c = prepare(srv)
    c.patch("/api/sessions/case", json={"end_reason": "client_closed"})
    c.post("/api/sessions/case/chat", json={"message": "more"})
    only(c, "chat-after-close", "warning", [1, 2])


def test_chatting_on_a_new_session_after_closing_is_clean(srv: RunningServer) -> None:
    c = prepare(srv)
    c.patch("/api/sessions/case", json={"end_reason": "client_closed"})
    c.post("/api/sessions/case/fork", json={"id": "case-2"})
    c.post("/api/sessions/case-2/chat", json={"message": "more"})
    clean(c)


def raw_get(srv: RunningServer, target: str) -> None:
    """A GET with the request target exactly as given (clients would encode it)."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                     "Connection: close\r\n\r\n".encode())
        while sock.recv(65536):
            pass


def test_an_id_sent_unencoded_is_reported(srv: RunningServer) -> None:
    c = prepare(srv)
    raw_get(srv, "/api/sessions/a|b")
    only(c, "unencoded-id", "warning", [1], "a|b")


def test_an_id_sent_percent_encoded_is_clean(srv: RunningServer) -> None:
    c = prepare(srv)
    raw_get(srv, "/api/sessions/a%7Cb")
    clean(c)


def test_a_call_without_the_credential_is_reported(srv: RunningServer) -> None:
    c = prepare(srv)
    assert httpx.get(f"{srv.url}/api/sessions").status_code == 401
    only(c, "missing-credential", "warning", [1], None)


def test_a_wrong_key_is_not_a_missing_one(srv: RunningServer) -> None:
    c = prepare(srv)
    assert httpx.get(f"{srv.url}/api/sessions", headers={"Authorization": "Bearer nope"}).status_code == 401
    c.get("/api/sessions")
    clean(c)


# -- the command line ------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", "audit", *args], capture_output=True, text=True,
                          env=clean_env(), timeout=60)


def test_cli_exits_0_when_clean_and_1_on_an_error_finding(srv: RunningServer) -> None:
    c = prepare(srv)
    c.get("/api/sessions", params={"limit": 0})  # a warning only
    warned = cli("--url", srv.url, "--api-key", KEY)
    assert warned.returncode == 0, warned.stderr
    assert "zero-limit-list" in warned.stdout and "0 error(s), in 1 journalled request(s)" in warned.stdout
    c.delete("/_fixture/requests")
    assert cli("--url", srv.url, "--api-key", KEY).stdout.startswith("clean: no findings in 0")
    c.get("/api/sessions/bad%00id")
    failed = cli("--url", srv.url, "--api-key", KEY)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    header, row = failed.stdout.splitlines()[:2]
    assert header.split()[:4] == ["severity", "rule", "requests", "session"]
    assert row.split()[:3] == ["error", "control-character-id", "1"]


def test_cli_exits_2_when_the_server_cannot_be_asked(srv: RunningServer) -> None:
    keyless = cli("--url", srv.url)
    assert keyless.returncode == 2 and "status 401" in keyless.stderr and "--api-key" in keyless.stderr
    gone = cli("--url", "http://127.0.0.1:19549", "--api-key", KEY, "--timeout", "2")
    assert gone.returncode == 2 and gone.stderr.startswith("hermes-server audit: http://127.0.0.1:19549/_fixture/audit")


# -- Retry-After on status faults ------------------------------------------------------

def test_status_faults_say_when_to_come_back(srv: RunningServer) -> None:
    c = prepare(srv, {"route": "sessions_list", "kind": "status", "status": 503},
                {"route": "sessions_list", "kind": "status", "status": 429, "retry_after": 0},
                {"route": "sessions_list", "kind": "status", "status": 503, "headers": {"retry-after": "7"}},
                {"route": "sessions_list", "kind": "status", "status": 500})
    assert [c.get("/api/sessions").headers.get("Retry-After") for _ in range(4)] == ["1", "0", "7", None]
    refused = c.put("/_fixture/faults", json={"kind": "status", "status": 500, "retry_after": 2})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_fault"
    assert "retry_after" in refused.json()["error"]["message"]
