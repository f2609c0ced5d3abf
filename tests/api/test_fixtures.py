"""Fixtures and the control API: loading any state, reset, seed, journal, determinism,
and the promise that none of it changes a server started without the flags.

Over 400 lines on purpose: the tests share one control-API server and its fixtures, and
splitting them would start that server once per file.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import RunningServer, start_server
from tests.support.sse import stream_chat

pytestmark = pytest.mark.in_process

T0 = 1_800_000_000.0

FIXTURE: dict[str, Any] = {
    "hermes_fixture": 1,
    "description": "one of each kind of row the API cannot make by itself",
    "sessions": [
        {"id": "plain", "title": "Plain", "model": "m-1", "system_prompt": "Be brief.", "started_at": T0,
         "messages": [
             {"role": "user", "content": "first question"},
             {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                      "function": {"name": "lookup", "arguments": "{}"}}]},
             {"role": "tool", "content": "42", "tool_call_id": "c1", "tool_name": "lookup"},
             {"role": "assistant", "content": [{"type": "text", "text": "It is 42."}], "reasoning": "looked it up",
              "reasoning_content": "rc", "finish_reason": "stop", "token_count": 7},
             {"role": "user", "content": "archived turn", "active": False, "compacted": True},
         ]},
        {"id": "tg", "source": "telegram", "user_id": "user-7", "title": "Telegram chat",
         "model_config": {"max_iterations": 90}, "started_at": "2027-01-15T10:00:00Z",
         "ended_at": "2027-01-15T11:00:00Z", "end_reason": "user_exit", "input_tokens": 100, "output_tokens": 50,
         "cache_read_tokens": 5, "cache_write_tokens": 6, "reasoning_tokens": 7, "api_call_count": 3,
         "estimated_cost_usd": 0.125, "actual_cost_usd": 0.25, "messages": [{"role": "user", "content": "hello"}]},
        {"id": "root", "title": "Root", "started_at": T0 + 100, "end_reason": "compression", "ended_at": T0 + 110,
         "messages": [{"role": "user", "content": "long ago"}]},
        {"id": "root-2", "parent": "root", "relation": "compression", "started_at": T0 + 110,
         "messages": [{"role": "assistant", "content": "summary"}, {"role": "user", "content": "latest words"}]},
        {"id": "helper", "parent": "root", "relation": "delegate", "source": "tool", "started_at": T0 + 105},
        {"id": "side", "parent": "plain", "relation": "branch", "started_at": T0 + 200},
        {"id": "hidden", "title": "Archived", "archived": True, "started_at": T0 + 300},
    ],
}


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server started with the fixture, the control API and deterministic mode."""
    base = tmp_path_factory.mktemp("fx")
    srv = start_server(base / "home", "--fixture", str(write(base / "f.json", FIXTURE)), "--fixture-api", "--deterministic")
    yield srv
    srv.stop()


@pytest.fixture
def c(fx: RunningServer) -> httpx.Client:
    """The fixture server's client, after a reset to the start fixture."""
    assert fx.client.post("/_fixture/reset").status_code == 200
    return fx.client


def ids(listing: httpx.Response) -> list[str]:
    assert listing.status_code == 200, listing.text
    return [row["id"] for row in listing.json()["data"]]


def counts(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        sessions = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
        return sessions, conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]


# -- loading: what the API shows of a fixture ------------------------------------

def test_fixture_rows_are_what_the_api_shows(c: httpx.Client) -> None:
    tg = c.get("/api/sessions/tg").json()["session"]
    assert tg == {
        "id": "tg", "source": "telegram", "user_id": "user-7", "model": None, "title": "Telegram chat",
        "started_at": 1800007200.0, "ended_at": 1800010800.0, "end_reason": "user_exit", "message_count": 1,
        "tool_call_count": 0, "input_tokens": 100, "output_tokens": 50, "cache_read_tokens": 5,
        "cache_write_tokens": 6, "reasoning_tokens": 7, "estimated_cost_usd": 0.125, "actual_cost_usd": 0.25,
        "api_call_count": 3, "parent_session_id": None, "has_system_prompt": False, "has_model_config": True,
    }
    plain = c.get("/api/sessions/plain").json()["session"]
    assert (plain["model"], plain["has_system_prompt"], plain["message_count"], plain["tool_call_count"]) == ("m-1", True, 4, 1)
    msgs = c.get("/api/sessions/plain/messages").json()
    assert msgs["session_id"] == "plain"
    assert [(m["id"], m["role"], m["timestamp"]) for m in msgs["data"]] == [
        (1, "user", T0 + 1), (2, "assistant", T0 + 2), (3, "tool", T0 + 3), (4, "assistant", T0 + 4)]
    assert msgs["data"][1]["tool_calls"][0]["function"]["name"] == "lookup"
    assert (msgs["data"][2]["tool_call_id"], msgs["data"][2]["tool_name"]) == ("c1", "lookup")
    last = msgs["data"][3]
    assert (last["content"], last["reasoning"], last["reasoning_content"], last["finish_reason"], last["token_count"]) == (
        [{"type": "text", "text": "It is 42."}], "looked it up", "rc", "stop", 7)


def test_fixture_lineage_behaves_like_real_rows(c: httpx.Client) -> None:
    # Default list: compression root projected to its tip, delegate and archived rows hidden, branch listed.
    listing = c.get("/api/sessions").json()["data"]
    assert sorted(row["id"] for row in listing) == ["plain", "root-2", "side", "tg"]
    tip = next(row for row in listing if row["id"] == "root-2")
    assert (tip["_lineage_root_id"], tip["started_at"], tip["preview"]) == ("root", T0 + 100, "latest words")
    assert "helper" in ids(c.get("/api/sessions", params={"include_children": "true"}))
    assert "hidden" not in ids(c.get("/api/sessions", params={"include_children": "true"}))
    assert c.get("/api/sessions/hidden").status_code == 200
    assert c.get("/api/sessions/root/messages").json()["session_id"] == "root-2"
    # Delete: the delegate goes with its parent, the continuation is unlinked and kept.
    assert c.delete("/api/sessions/root").json()["deleted"] is True
    assert c.get("/api/sessions/helper").status_code == 404
    assert c.get("/api/sessions/root-2").json()["session"]["parent_session_id"] is None


# -- reset and seed ------------------------------------------------------------------

def test_reset_goes_back_to_empty_or_to_the_start_fixture(fx: RunningServer, c: httpx.Client) -> None:
    assert c.post("/api/sessions", json={"id": "made-later"}).status_code == 201
    assert c.patch("/api/sessions/plain", json={"title": "Renamed"}).status_code == 200
    r = c.post("/_fixture/reset", json={"to": "empty"})
    assert r.json() == {"object": "hermes.fixture.reset", "to": "empty", "sessions_written": 0,
                        "messages_written": 0, "sessions_total": 0, "messages_total": 0}
    assert ids(c.get("/api/sessions", params={"include_children": "true"})) == []
    assert counts(fx.db_path) == (0, 0)
    # Message ids restart, so a reset run is repeatable down to the row ids.
    c.post("/_fixture/seed", json={"sessions": [{"id": "x", "messages": [{"role": "user", "content": "a"}]}]})
    assert c.get("/api/sessions/x/messages").json()["data"][0]["id"] == 1
    r = c.post("/_fixture/reset")
    assert (r.json()["to"], r.json()["sessions_total"], r.json()["messages_total"]) == ("fixture", 7, 9)
    assert c.get("/api/sessions/made-later").status_code == 404
    assert c.get("/api/sessions/plain").json()["session"]["title"] == "Plain"
    bad = c.post("/_fixture/reset", json={"to": "yesterday"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "$.to"


def test_seed_merges_a_fixture(c: httpx.Client) -> None:
    r = c.post("/_fixture/seed", json={"sessions": [
        {"id": "plain-fork", "parent": "plain", "relation": "fork", "messages": [{"role": "user", "content": "q"}]},
        {"id": "new-root", "title": "New"},
    ]})
    assert r.status_code == 200
    assert r.json() == {"object": "hermes.fixture.seeded", "sessions_written": 2, "messages_written": 1,
                        "sessions_total": 9, "messages_total": 10}
    assert c.get("/api/sessions/plain-fork").json()["session"]["parent_session_id"] == "plain"


@pytest.mark.parametrize("document, param, message", [
    ({"sessions": [{"id": "ok-1"}, {"id": "ok-2", "colour": "red"}]},
     "$.sessions[1].colour", "$.sessions[1].colour: unknown field"),
    ({"sessions": [{"id": "ok-1"}, {"id": "plain"}]},
     "$.sessions[1].id", "$.sessions[1].id: session 'plain' already exists in state.db"),
    ({"sessions": [{"id": "ok-1"}, {"id": "ok-2", "title": "Root"}]},
     "$.sessions[1].title", "$.sessions[1].title: title 'Root' is already used by session 'root'"),
    ({"sessions": [{"id": "ok-1"}, {"id": "ok-2", "parent": "ghost"}]},
     "$.sessions[1].parent", "$.sessions[1].parent: unknown parent 'ghost': not in the fixture or in state.db"),
    ({"sessions": [{"id": "ok-1"}, {"id": "ok-2", "parent": "plain", "relation": "compression"}]},
     "$.sessions[1].relation",
     "$.sessions[1].relation: parent 'plain' must have end_reason 'compression' for a compression continuation"),
    ({"sessions": [{"id": "ok-1", "bad": 1}, {"id": "ok-2", "input_tokens": "x"}]},
     "$.sessions[0].bad", "$.sessions[0].bad: unknown field; $.sessions[1].input_tokens: must be an integer, got a string"),
])
def test_seed_rejects_the_whole_fixture(fx: RunningServer, c: httpx.Client, document: Any, param: str, message: str) -> None:
    before = counts(fx.db_path)
    r = c.post("/_fixture/seed", json=document)
    assert r.status_code == 400
    assert r.json() == {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": "invalid_fixture"}}
    assert c.get("/api/sessions/ok-1").status_code == 404
    assert counts(fx.db_path) == before


def test_the_http_seed_names_every_problem_the_seed_command_lists(c: httpx.Client, tmp_path: Path) -> None:
    """Once "…(and 3 more problems)" over HTTP, where `hermes-server seed` listed all four."""
    document = {"sessions": [{"id": "p-1", "colour": "red"}, {"id": "p-2", "input_tokens": "x"},
                             {"id": "p-3", "messages": [{"role": "robot", "content": "q"}]}, {"title": 7}]}
    answer = c.post("/_fixture/seed", json=document).json()["error"]["message"]
    listed = seed_cli(str(write(tmp_path / "four.json", document)), "--home", str(tmp_path / "home"))
    problems = [line.strip() for line in listed.stderr.splitlines()[1:] if line.strip()]
    assert listed.returncode == 1 and len(problems) == 4, listed.stderr
    assert answer.split("; ") == problems


def test_control_api_needs_the_key(fx: RunningServer) -> None:
    for method, path in [("POST", "/_fixture/reset"), ("POST", "/_fixture/seed"), ("GET", "/_fixture/faults"),
                         ("PUT", "/_fixture/faults"), ("DELETE", "/_fixture/faults"), ("GET", "/_fixture/requests"),
                         ("DELETE", "/_fixture/requests"), ("GET", "/_fixture/clock"), ("POST", "/_fixture/clock")]:
        r = httpx.request(method, fx.url + path, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401, (method, path)
        assert r.json()["error"]["code"] == "invalid_api_key"
    assert fx.client.get("/api/sessions/plain").status_code == 200  # nothing was reset


# -- the journal ---------------------------------------------------------------------

def test_journal_records_requests_not_control_calls(c: httpx.Client) -> None:
    c.delete("/_fixture/requests")
    c.post("/api/sessions", json={"id": "j1", "title": "Secret title"})
    c.post("/api/sessions", json={})
    c.get("/api/sessions/j1")
    c.get("/nowhere")
    c.get("/_fixture/faults")
    entries = c.get("/_fixture/requests").json()["data"]
    assert [(e["seq"], e["method"], e["route"], e["template"], e["path"], e["status"]) for e in entries] == [
        (1, "POST", "sessions", "/api/sessions", "/api/sessions", 201),
        (2, "POST", "sessions", "/api/sessions", "/api/sessions", 201),
        (3, "GET", "session", "/api/sessions/{session_id}", "/api/sessions/j1", 200),
        (4, "GET", None, None, "/nowhere", 404),
    ]
    generated = entries[1]["session_ids"][0]
    assert re.fullmatch(r"api_\d+_[0-9a-f]{8}", generated)
    assert [e["session_ids"] for e in entries] == [["j1"], [generated], ["j1"], []]
    assert entries[0]["request_body"] == {"redacted": True, "bytes": len(b'{"id":"j1","title":"Secret title"}')}
    assert "Secret" not in json.dumps(entries)
    assert all(e["duration_ms"] >= 0 and e["outcome"] == "response" and e["faults"] == [] for e in entries)
    shown = c.get("/_fixture/requests", params={"bodies": "true", "route": "session_create"}).json()["data"]
    assert [e["request_body"] for e in shown] == [{"id": "j1", "title": "Secret title"}, {}]
    assert shown[0]["response_body"]["session"]["title"] == "Secret title"
    assert [e["seq"] for e in c.get("/_fixture/requests", params={"session_id": "j1"}).json()["data"]] == [1, 3]
    assert [e["seq"] for e in c.get("/_fixture/requests", params={"status": "404"}).json()["data"]] == [4]
    assert c.delete("/_fixture/requests").json() == {"object": "list", "data": []}
    assert c.get("/_fixture/requests").json()["data"] == []


def test_journal_names_the_effective_id_of_a_chat(c: httpx.Client) -> None:
    c.delete("/_fixture/requests")
    assert c.post("/api/sessions/plain/chat", json={"message": "hi"}).status_code == 200
    (entry,) = c.get("/_fixture/requests").json()["data"]
    assert (entry["route"], entry["session_ids"]) == ("session_chat", ["plain"])


# -- deterministic mode ------------------------------------------------------------------

def test_deterministic_ids_repeat_after_reset(c: httpx.Client) -> None:
    def run() -> list[Any]:
        c.post("/_fixture/reset", json={"to": "empty"})
        first = c.post("/api/sessions", json={}).json()["session"]
        fork = c.post(f"/api/sessions/{first['id']}/fork", json={}).json()["session"]
        turn = c.post(f"/api/sessions/{fork['id']}/chat", json={"message": "hi"}).json()
        return [first, fork, turn, c.get(f"/api/sessions/{fork['id']}/messages").json()]

    once, again = run(), run()
    assert once == again
    first, fork = once[0], once[1]
    assert re.fullmatch(r"api_1893456000_[0-9a-f]{8}", first["id"])
    assert fork["id"] != first["id"] and first["started_at"] < fork["started_at"] < 1893456001


def test_deterministic_runs_repeat_across_processes(tmp_path: Path) -> None:
    """`--deterministic` alone (no control API): two fresh servers give the same bytes for the same requests."""
    def run(name: str) -> list[bytes]:
        srv = start_server(tmp_path / name, "--deterministic")
        try:
            made = srv.client.post("/api/sessions", json={})
            sid = made.json()["session"]["id"]
            return [made.content, srv.client.post(f"/api/sessions/{sid}/fork", json={}).content,
                    srv.client.post(f"/api/sessions/{sid}/chat", json={"message": "hi"}).content,
                    srv.client.get("/api/sessions").content]
        finally:
            srv.stop()

    first = run("one")
    assert first == run("two")
    assert b'"id": "api_1893456000_' in first[0]


def test_clock_can_be_set_and_advanced(c: httpx.Client) -> None:
    r = c.post("/_fixture/clock", json={"now": "2031-05-01T00:00:00Z", "step": 0})
    assert r.json() == {"object": "hermes.fixture.clock", "now": 1935360000.0, "step": 0.0, "manual": True,
                        "deterministic": True}
    made = c.post("/api/sessions", json={}).json()["session"]
    assert made["started_at"] == 1935360000.0 and made["id"].startswith("api_1935360000_")
    c.post("/_fixture/clock", json={"advance": 90.5})
    assert c.post("/api/sessions", json={"id": "later"}).json()["session"]["started_at"] == 1935360090.5
    bad = c.post("/_fixture/clock", json={"now": "soon"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "$.now"
    c.post("/_fixture/reset", json={"to": "empty"})
    assert c.get("/_fixture/clock").json()["now"] == 1893456000.0  # rewound


def test_stream_events_use_the_deterministic_clock(c: httpx.Client) -> None:
    c.post("/_fixture/clock", json={"now": 1900000000, "step": 0})
    _, frames = stream_chat(c, "plain", {"message": "hi"})
    assert {f.data["ts"] for f in frames if f.data} == {1900000000.0}


# -- the seed command -----------------------------------------------------------------

def seed_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", "seed", *args], capture_output=True, text=True, timeout=60)


def test_seed_command_loads_into_a_running_server(fx: RunningServer, c: httpx.Client, tmp_path: Path) -> None:
    doc = {"sessions": [{"id": "from-cli", "source": "cron", "parent": "tg", "messages": [{"role": "user", "content": "x"}]}]}
    done = seed_cli(str(write(tmp_path / "s.json", doc)), "--home", str(fx.home))
    assert done.returncode == 0, done.stderr
    assert "1 session, 1 message" in done.stdout
    assert c.get("/api/sessions/from-cli").json()["session"]["source"] == "cron"
    # Rejected whole: the valid first session is not written either; every problem is listed.
    bad = {"sessions": [{"id": "cli-ok"}, {"id": "tg"}, {"id": "cli-bad", "parent": "nobody"}]}
    before = counts(fx.db_path)
    done = seed_cli(str(write(tmp_path / "bad.json", bad)), "--home", str(fx.home))
    assert done.returncode == 1
    assert "$.sessions[1].id: session 'tg' already exists in state.db" in done.stderr
    assert "$.sessions[2].parent: unknown parent 'nobody'" in done.stderr
    assert counts(fx.db_path) == before
    assert c.get("/api/sessions/cli-ok").status_code == 404


def test_seed_command_without_a_server_replace_and_yaml(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert seed_cli(str(write(tmp_path / "a.json", FIXTURE)), "--home", str(home)).returncode == 0
    assert counts(home / "state.db") == (7, 9)
    doc = tmp_path / "b.json"
    write(doc, {"sessions": [{"id": "only"}]})
    # FIXTURE holds cli/telegram/... sessions, which --replace counts as not written by
    # hermes-server (test_fixture_edges.py): replacing them takes --force.
    assert seed_cli(str(doc), "--home", str(home), "--replace").returncode == 2
    assert seed_cli(str(doc), "--home", str(home), "--replace", "--force").returncode == 0
    assert counts(home / "state.db") == (1, 0)
    done = seed_cli(str(tmp_path / "missing.json"), "--home", str(home))
    assert done.returncode == 1 and "cannot read" in done.stderr
    (tmp_path / "broken.json").write_text("{\"sessions\": [")
    done = seed_cli(str(tmp_path / "broken.json"), "--home", str(home))
    assert done.returncode == 1 and "$: not valid JSON" in done.stderr
    pytest.importorskip("yaml")
    (tmp_path / "c.yaml").write_text(
        "sessions:\n  - id: from-yaml\n    started_at: 2030-01-01T00:00:00Z\n    messages:\n      - {role: user, content: hi}\n")
    assert seed_cli(str(tmp_path / "c.yaml"), "--home", str(home)).returncode == 0
    with sqlite3.connect(home / "state.db") as conn:
        assert conn.execute("SELECT started_at FROM sessions WHERE id = 'from-yaml'").fetchone()[0] == 1893456000.0
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_serve_refuses_a_bad_fixture(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.json", {"sessions": [{"id": "a", "messages": [{"role": "user", "content": 5}]}]})
    with pytest.raises(RuntimeError, match=re.escape("$.sessions[0].messages[0].content: must be a string")):
        start_server(tmp_path / "home", "--fixture", str(bad))
    # Valid on its own, but clashing with what state.db already holds: start fails, nothing written.
    home = tmp_path / "home2"
    assert seed_cli(str(write(tmp_path / "one.json", {"sessions": [{"id": "a"}]})), "--home", str(home)).returncode == 0
    clash = write(tmp_path / "clash.json", {"sessions": [{"id": "b"}, {"id": "a"}]})
    with pytest.raises(RuntimeError, match=re.escape("$.sessions[1].id: session 'a' already exists")):
        start_server(home, "--fixture", str(clash))
    assert counts(home / "state.db") == (1, 0)


# -- off by default ------------------------------------------------------------------------

CONTROL_PATHS = ["/_fixture/reset", "/_fixture/seed", "/_fixture/faults", "/_fixture/requests", "/_fixture/clock",
                 "/_fixture/", "/_fixture/nope"]


def test_without_the_flag_fixture_paths_are_unknown_paths(server: RunningServer) -> None:
    def answer(method: str, path: str) -> tuple[int, list[tuple[str, str]], bytes]:
        r = server.client.request(method, path, json={} if method in ("POST", "PUT") else None)
        return r.status_code, [(k, v) for k, v in r.headers.items() if k not in ("date", "content-length")], r.content

    unknown = answer("GET", "/no-such-path")
    assert unknown[0] == 404 and unknown[2] == b"404: Not Found"
    for path in CONTROL_PATHS:
        for method in ("GET", "POST", "PUT", "DELETE"):
            assert answer(method, path) == unknown, (method, path)


_TIMES = re.compile(r'"(started_at|ended_at|last_active|timestamp|ts)": -?[0-9][0-9.e+-]*')
_IDS = re.compile(r"api_\d+_[0-9a-f]{8}|msg_[0-9a-f]{32}|run_[0-9a-f]{32}")


def _normalise(text: str) -> str:
    """Blank what legitimately differs between two servers: clock readings and generated ids."""
    return _IDS.sub("<id>", _TIMES.sub(r'"\1": <time>', text))


def _exchange(srv: RunningServer) -> list[Any]:
    """One request sequence over all nine routes, success and error paths: status, headers and body bytes."""
    c = srv.client
    out: list[Any] = []

    def note(r: httpx.Response) -> None:
        # Content-Length follows the body, whose timestamps may have a different number of digits.
        headers = [(k, _normalise(v.decode("latin-1"))) for k, v in r.headers.raw
                   if k.lower() not in (b"date", b"content-length")]
        out.append((r.request.method, r.request.url.path, r.status_code, headers, _normalise(r.content.decode("utf-8"))))

    note(c.post("/api/sessions", json={"id": "cmp", "title": "Compare", "system_prompt": "sp"}))
    note(c.post("/api/sessions", json={"id": "cmp"}))
    note(c.post("/api/sessions", json={"id": "../x"}))
    note(c.post("/api/sessions", content=b"{not json"))
    note(c.post("/api/sessions", json={}))
    note(c.get("/api/sessions"))
    note(c.get("/api/sessions", params={"limit": "0", "source": "api_server"}))
    note(c.get("/api/sessions/cmp"))
    note(c.get("/api/sessions/missing"))
    note(c.patch("/api/sessions/cmp", json={"title": "Compared"}))
    note(c.patch("/api/sessions/cmp", json={"model": "x"}))
    note(c.post("/api/sessions/cmp/chat", json={"message": "hello"}))
    note(c.post("/api/sessions/cmp/chat", json={"message": "  "}))
    with c.stream("POST", "/api/sessions/cmp/chat/stream", json={"message": "again"}) as r:
        r.read()
        note(r)
    note(c.get("/api/sessions/cmp/messages"))
    note(c.post("/api/sessions/cmp/fork", json={"id": "cmp-2"}))
    note(c.post("/api/sessions/cmp/fork", json={"id": "cmp-3", "title": "Compared"}))
    note(c.post("/api/sessions/cmp/fork", json={"id": " "}))
    note(c.get("/api/sessions", params={"include_children": "true"}))
    note(c.delete("/api/sessions/cmp"))
    note(c.delete("/api/sessions/cmp"))
    note(httpx.get(srv.url + "/api/sessions", headers={"Authorization": "Bearer nope"}))
    note(c.request("PUT", "/api/sessions"))
    note(c.get("/health"))
    return out


def test_nine_routes_answer_the_same_with_and_without_the_fixture_api(tmp_path: Path) -> None:
    plain = start_server(tmp_path / "plain")
    extended = start_server(tmp_path / "extended", "--fixture-api")
    try:
        without, with_api = _exchange(plain), _exchange(extended)
    finally:
        plain.stop()
        extended.stop()
    assert len(without) == 24
    for a, b in zip(without, with_api, strict=True):
        assert a == b
    assert with_api[0][2] == 201 and with_api[11][2] == 200  # the sequence really ran
