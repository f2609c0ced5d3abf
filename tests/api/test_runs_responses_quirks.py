"""`serve --upstream-quirks` on structured runs and the Responses API: 0.19.0's answers, over real HTTP.

D6: the bodies 0.19.0 crashes on get its bare text/plain 500 (and nothing runs or is stored);
D9: the history kept for chaining is 0.19.0's, first user message twice and the chain repeated
on every turn, so the echo agent's `[n=K]` counts what 0.19.0's model is given
(tools/oracle_runs_diff.py --upstream-quirks compares the same requests with the oracle).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.runs import RUN_SCRIPT, submit, wait_status
from tests.support.server import RunningServer, start_server, start_with_script

pytestmark = pytest.mark.in_process

CRASH = (500, "text/plain; charset=utf-8", b"500 Internal Server Error\n\nServer got itself in trouble")
MARK = "_db_persisted"


@pytest.fixture(scope="module")
def quirky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("quirky-echo") / "home", "--upstream-quirks")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("quirky-script") / "home", RUN_SCRIPT, "--upstream-quirks")
    yield srv
    srv.stop()


def crash(response: Any) -> tuple[int, str, bytes]:
    return response.status_code, response.headers["content-type"], response.content


def _store_rows(server: RunningServer) -> int:
    with sqlite3.connect(server.home / "response_store.db") as conn:
        return conn.execute("SELECT count(*) FROM responses").fetchone()[0]


def _history(server: RunningServer, response_id: str) -> list[dict[str, Any]]:
    with sqlite3.connect(server.home / "response_store.db") as conn:
        row = conn.execute("SELECT data FROM responses WHERE response_id = ?", (response_id,)).fetchone()
    return json.loads(row[0])["conversation_history"]


def _reply(answer: dict[str, Any]) -> str:
    return answer["output"][-1]["content"][0]["text"]


def test_d6_run_bodies_upstream_crashes_on(quirky: RunningServer) -> None:
    for body in (b"[1]", b'"text"', b'{"input": ["bare"]}', b'{"input": [{"role": "user", "content": "x"}, 5]}',
                 b'{"input": "x", "previous_response_id": "r\\ud800"}'):
        assert crash(quirky.client.post("/v1/runs", content=body)) == CRASH
    queues = quirky.client.get("/health/detailed").json()["readiness"]["checks"]["background_queues"]
    assert queues["active_api_runs"] == 0  # no run was started
    # What 0.19.0 refuses itself stays its 400.
    assert quirky.client.post("/v1/runs", content=b"{").status_code == 400
    assert quirky.client.post("/v1/runs", json={"input": []}).status_code == 400


def test_d6_approval_body_not_an_object_crashes(scripted: RunningServer) -> None:
    run_id = submit(scripted.client, {"input": "approve it"})
    assert wait_status(scripted.client, run_id, ("waiting_for_approval",))["status"] == "waiting_for_approval"
    assert crash(scripted.client.post(f"/v1/runs/{run_id}/approval", content=b'["deny"]')) == CRASH
    # The approval is still pending, and answered as usual.
    answer = scripted.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "deny"})
    assert answer.status_code == 200 and answer.json()["resolved"] == 1
    assert wait_status(scripted.client, run_id)["status"] == "completed"


def test_d6_response_bodies_upstream_crashes_on(quirky: RunningServer) -> None:
    before = _store_rows(quirky)
    for body in (b'["x"]', b"5", b'{"input": "x", "conversation": {"a": 1}}',
                 b'{"input": "x", "conversation": ["c"]}', b'{"input": "x", "conversation": ["c"], "stream": true}',
                 b'{"input": "x", "previous_response_id": "r\\ud800"}', b'{"input": "x", "conversation": "c\\ud800"}'):
        assert crash(quirky.client.post("/v1/responses", content=body)) == CRASH
    assert _store_rows(quirky) == before
    assert quirky.client.post("/v1/responses", content=b"{").status_code == 400
    assert quirky.client.post("/v1/responses", json={"input": "x", "conversation": "c",
                                                     "previous_response_id": "r"}).status_code == 400


def _user_rows(server: RunningServer, text: str) -> int:
    with sqlite3.connect(server.home / "state.db") as conn:
        return conn.execute("SELECT count(*) FROM messages WHERE role = 'user' AND content = ?", (text,)).fetchone()[0]


def test_d6_an_instruction_that_is_not_text_fails_the_turn(quirky: RunningServer) -> None:
    answer = quirky.client.post("/v1/responses", json={"input": "inst plain", "instructions": 7})
    assert (answer.status_code, answer.json()) == (500, {"error": {
        "message": 'Internal server error: can only concatenate str (not "int") to str', "type": "server_error",
        "param": None, "code": None}})
    assert _user_rows(quirky, "inst plain") == 1  # 0.19.0's agent fails after storing the user message
    streamed = quirky.client.post("/v1/responses", json={"input": "inst stream", "instructions": [1], "stream": True})
    events = [block.split("\n")[0] for block in streamed.text.split("\n\n") if block]
    assert (streamed.status_code, events) == (200, ["event: response.created", "event: response.failed"])
    failed = json.loads(streamed.text.split("\n\n")[1].split("data: ", 1)[1])["response"]
    assert failed["error"] == {"message": 'can only concatenate str (not "list") to str', "type": "server_error"}
    with sqlite3.connect(quirky.home / "response_store.db") as conn:
        stored = json.loads(conn.execute("SELECT data FROM responses WHERE response_id = ?",
                                         (failed["id"],)).fetchone()[0])
    assert stored["instructions"] == [1] and stored["response"]["status"] == "failed"
    assert stored["conversation_history"] == [{"role": "user", "content": "inst stream"},
                                              {"role": "assistant", "content": failed["error"]["message"]}]


def test_d9_first_response_stores_its_user_message_twice(quirky: RunningServer) -> None:
    answer = quirky.client.post("/v1/responses", json={"input": "conv one", "conversation": "d9-conv"}).json()
    assert _reply(answer) == "ECHO-REPLY to: conv one [n=1]"
    assert _history(quirky, answer["id"]) == [
        {"role": "user", "content": "conv one"},
        {"role": "user", "content": "conv one", MARK: True},
        {"role": "assistant", "content": "ECHO-REPLY to: conv one [n=1]", "finish_reason": "stop",
         "reasoning": None, MARK: True}]


def test_d9_chained_turns_see_and_store_the_repeated_chain(quirky: RunningServer) -> None:
    counts, ids = [], []
    for text in ("a", "b", "c", "d"):
        body = {"input": text, **({"previous_response_id": ids[-1]} if ids else {})}
        answer = quirky.client.post("/v1/responses", json=body).json()
        ids.append(answer["id"])
        counts.append(_reply(answer).rsplit("[n=", 1)[1].rstrip("]"))
    assert counts == ["1", "3", "7", "15"]  # 0.19.0's model views (a clean chain: 1, 3, 5, 7)
    second = _history(quirky, ids[1])
    assert [(m["role"], m["content"]) for m in second] == [
        ("user", "a\n\na"), ("user", "a"), ("assistant", "ECHO-REPLY to: a [n=1]"), ("user", "b"),
        ("user", "a\n\na"), ("assistant", "ECHO-REPLY to: a [n=1]"), ("user", "b"),
        ("assistant", "ECHO-REPLY to: b [n=3]")]
    assert [MARK in m for m in second] == [True, True, True, False, True, True, True, True]
    # state.db keeps each turn once, as in 0.19.0.
    session = quirky.client.post("/v1/responses", json={"input": "e", "previous_response_id": ids[-1]})
    rows = quirky.client.get(f"/api/sessions/{session.headers['x-hermes-session-id']}/messages").json()["data"]
    assert [r["content"] for r in rows if r["role"] == "user"] == ["a", "b", "c", "d", "e"]


def test_d9_streamed_and_conversation_chains_too(quirky: RunningServer) -> None:
    first = quirky.client.post("/v1/responses", json={"input": "s1", "conversation": "d9-stream"}).json()
    assert _reply(first).endswith("[n=1]")
    streamed = quirky.client.post("/v1/responses", json={"input": "s2", "conversation": "d9-stream", "stream": True})
    done = [json.loads(block.split("data: ", 1)[1]) for block in streamed.text.split("\n\n")
            if block.startswith("event: response.completed")]
    assert _reply(done[0]["response"]).endswith("[n=3]")
    third = quirky.client.post("/v1/responses", json={"input": "s3", "conversation": "d9-stream"}).json()
    assert _reply(third).endswith("[n=7]")


def test_d9_explicit_history_is_not_duplicated(quirky: RunningServer) -> None:
    answer = quirky.client.post("/v1/responses", json={"input": "q", "conversation_history": [
        {"role": "user", "content": "h1"}, {"role": "assistant", "content": "h2"}]}).json()
    assert _reply(answer).endswith("[n=3]")
    assert [(m["role"], m["content"], MARK in m) for m in _history(quirky, answer["id"])] == [
        ("user", "h1", True), ("assistant", "h2", True), ("user", "q", True),
        ("assistant", "ECHO-REPLY to: q [n=3]", True)]


def test_d9_a_run_chained_from_a_response_sees_the_merged_chain(quirky: RunningServer) -> None:
    first = quirky.client.post("/v1/responses", json={"input": "r1"}).json()
    second = quirky.client.post("/v1/responses", json={"input": "r2", "previous_response_id": first["id"]}).json()
    run_id = submit(quirky.client, {"input": "run on it", "previous_response_id": second["id"]})
    assert wait_status(quirky.client, run_id)["output"] == "ECHO-REPLY to: run on it [n=7]"


def test_default_model_turn_merges_consecutive_user_messages(tmp_path: Path) -> None:
    """Without the flag too, the model is given consecutive user messages as one, the turn's own message
    included, as 0.19.0's agent does; state.db and the stored chain keep them apart."""
    srv = start_server(tmp_path / "home")
    try:
        history = [{"role": "user", "content": "h1"}, {"role": "user", "content": "h2"},
                   {"role": "assistant", "content": "h3"}]
        answer = srv.client.post("/v1/responses", json={"input": "q", "conversation_history": history}).json()
        assert _reply(answer) == "ECHO-REPLY to: q [n=3]"
        assert [m["content"] for m in _history(srv, answer["id"])] == ["h1", "h2", "h3", "q", "ECHO-REPLY to: q [n=3]"]
        run_id = submit(srv.client, {"input": "x", "conversation_history": history})
        assert wait_status(srv.client, run_id)["output"] == "ECHO-REPLY to: x [n=3]"
        folded = srv.client.post("/v1/responses", json={"input": ["a", "b"]})
        assert _reply(folded.json()) == "ECHO-REPLY to: a b [n=1]"
        rows = srv.client.get(f"/api/sessions/{folded.headers['x-hermes-session-id']}/messages").json()["data"]
        assert [(r["role"], r["content"]) for r in rows] == [("user", "b"), ("assistant", "ECHO-REPLY to: a b [n=1]")]
        run_id = submit(srv.client, {"input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})
        assert wait_status(srv.client, run_id)["output"] == "ECHO-REPLY to: a b [n=1]"
        parts = [{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "b"}]}]
        run_id = submit(srv.client, {"input": parts})  # a list content is never merged
        assert wait_status(srv.client, run_id)["output"] == "ECHO-REPLY to: b [n=2]"
    finally:
        srv.stop()


def test_default_instructions_and_run_fields_as_upstream(tmp_path: Path) -> None:
    """Without the flag: an empty instruction of any type is none, as in 0.19.0, a runs field 0.19.0's agent
    cannot take fails the run in 0.19.0's words, and a Responses instruction that is not text is D6's 400."""
    srv = start_server(tmp_path / "home")
    try:
        for empty in (0, False, [], {}):
            assert srv.client.post("/v1/responses", json={"input": "x", "instructions": empty}).status_code == 200
        assert srv.client.post("/v1/responses", json={"input": "x", "instructions": 7}).status_code == 400
        failed = wait_status(srv.client, submit(srv.client, {"input": "run inst", "instructions": 7}))
        assert (failed["status"], failed["error"]) == ("failed", 'can only concatenate str (not "int") to str')
        assert _user_rows(srv, "run inst") == 1
        failed = wait_status(srv.client, submit(srv.client, {"input": "run sid", "session_id": 7}))
        assert (failed["status"], failed["error"], failed["session_id"]) == ("failed", "str expected, not int", 7)
        assert _user_rows(srv, "run sid") == 0
        done = wait_status(srv.client, submit(srv.client, {"input": "run empty", "instructions": [], "session_id": 0}))
        assert done["status"] == "completed" and done["session_id"].startswith("run_")
        response = srv.client.post("/v1/runs", content=b'{"input": "run surrogate", "session_id": "s\\ud800"}')
        failed = wait_status(srv.client, response.json()["run_id"])
        assert failed["error"] == "'utf-8' codec can't encode character '\\ud800' in position 1: surrogates not allowed"
        assert _user_rows(srv, "run surrogate") == 0
    finally:
        srv.stop()


def test_default_lone_surrogates_in_lookups_are_d6_400s(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "home")
    try:
        for path, field in (("/v1/runs", "previous_response_id"), ("/v1/responses", "conversation")):
            answer = srv.client.post(path, content=b'{"input": "x", "%s": "c\\ud800"}' % field.encode())
            assert (answer.status_code, answer.json()["error"]["param"]) == (400, field)
            assert answer.json()["error"]["message"] == f"Invalid value for '{field}': text must be valid Unicode"
        answer = srv.client.post("/v1/responses", content=b'{"input": "x", "previous_response_id": "r\\ud800"}')
        assert answer.status_code == 404
    finally:
        srv.stop()
