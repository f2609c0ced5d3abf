"""The Responses API over real sockets, with the official `openai` client and raw HTTP."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.runs import RUN_SCRIPT
from tests.support.server import KEY, RunningServer, start_with_script

pytestmark = pytest.mark.in_process

# The DDL upstream's store creates (sqlite_master keeps its layout), so a real Hermes home keeps working.
STORE_SCHEMA = [
    ("responses", "CREATE TABLE responses (\n                response_id TEXT PRIMARY KEY,\n"
                  "                data TEXT NOT NULL,\n                accessed_at REAL NOT NULL\n            )"),
    ("conversations", "CREATE TABLE conversations (\n                name TEXT PRIMARY KEY,\n"
                      "                response_id TEXT NOT NULL\n            )"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("responses") / "home", RUN_SCRIPT)
    yield srv
    srv.stop()


@pytest.fixture()
def client(server: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)


def _stored(server: RunningServer, response_id: str) -> dict:
    with sqlite3.connect(server.home / "response_store.db") as conn:
        return json.loads(conn.execute("SELECT data FROM responses WHERE response_id = ?", (response_id,)).fetchone()[0])


def test_store_file_has_upstreams_schema(server: RunningServer) -> None:
    path = server.home / "response_store.db"
    assert path.exists() and path.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall() == STORE_SCHEMA
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_openai_client_plain_retrieve_delete(server: RunningServer, client: openai.OpenAI) -> None:
    response = client.responses.create(model="hermes-agent", input="plain question")
    assert response.status == "completed" and response.output_text == "plain answer"
    assert response.id.startswith("resp_") and len(response.id) == 33
    assert client.responses.retrieve(response.id).id == response.id
    assert client.responses.delete(response.id) is None
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_openai_client_stream(client: openai.OpenAI) -> None:
    events = list(client.responses.create(model="hermes-agent", input="stream it", stream=True))
    kinds = [event.type for event in events]
    # The message's content part opens and closes around its text (D10; 0.19.0 sends neither).
    assert kinds == ["response.created", "response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.done", "response.content_part.done",
                     "response.output_item.done", "response.completed"]
    assert [event.sequence_number for event in events] == list(range(8))
    assert events[-1].response.output_text == "plain answer"


def test_openai_client_chained(server: RunningServer, client: openai.OpenAI) -> None:
    first = client.responses.create(model="hermes-agent", input="one", instructions="be brief")
    second = client.responses.create(model="hermes-agent", input="two", previous_response_id=first.id)
    third = client.responses.create(model="hermes-agent", input="three", previous_response_id=second.id)
    history = _stored(server, third.id)["conversation_history"]
    # The clean history: each message once, in order (upstream repeats the first user message).
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "one"), ("assistant", "plain answer"), ("user", "two"), ("assistant", "plain answer"),
        ("user", "three"), ("assistant", "plain answer")]
    assert _stored(server, third.id)["instructions"] == "be brief"
    session = _stored(server, first.id)["session_id"]
    assert _stored(server, third.id)["session_id"] == session
    rows = server.client.get(f"/api/sessions/{session}/messages").json()["data"]
    assert [r["content"] for r in rows if r["role"] == "user"] == ["one", "two", "three"]


def test_echo_model_sees_the_clean_chain(tmp_path: Path) -> None:
    from tests.support.server import start_server

    srv = start_server(tmp_path / "home")
    try:
        ids = []
        for text in ("a", "b", "c"):
            body = {"input": text, **({"previous_response_id": ids[-1]} if ids else {})}
            answer = srv.client.post("/v1/responses", json=body).json()
            ids.append(answer["id"])
        assert answer["output"][-1]["content"][0]["text"] == "ECHO-REPLY to: c [n=5]"
    finally:
        srv.stop()


def test_plain_answer_shape_and_headers(server: RunningServer) -> None:
    response = server.client.post("/v1/responses", json={"input": "tool please", "model": 42},
                                  headers={"X-Hermes-Session-Key": "scope"})
    body = response.json()
    assert list(body) == ["id", "object", "status", "created_at", "model", "output", "usage"]
    assert body["model"] == 42 and isinstance(body["created_at"], int)
    assert body["output"][0] == {"type": "function_call", "name": "search", "arguments": '{"q": "x"}',
                                 "call_id": "call_1"}
    assert body["output"][1] == {"type": "function_call_output", "call_id": "call_1", "output": "3 hits"}
    assert body["output"][2] == {"type": "message", "role": "assistant",
                                 "content": [{"type": "output_text", "text": "found"}]}
    assert response.headers["x-hermes-session-key"] == "scope"
    session = response.headers["x-hermes-session-id"]
    assert len(session) == 36 and server.client.get(f"/api/sessions/{session}").status_code == 200


def test_streamed_tools(server: RunningServer) -> None:
    with server.client.stream("POST", "/v1/responses", json={"input": "tool please", "stream": True}) as response:
        raw = b"".join(response.iter_raw()).decode("ascii")
    frames = [block.split("\n") for block in raw.split("\n\n") if block]
    kinds = [f[0][len("event: "):] for f in frames]
    assert kinds == ["response.created", "response.output_item.added", "response.output_item.done",
                     "response.output_item.added", "response.output_item.done", "response.output_item.added",
                     "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                     "response.content_part.done", "response.output_item.done", "response.completed"]
    data = [json.loads(f[1][len("data: "):]) for f in frames]
    assert all(list(d)[-1] == "sequence_number" for d in data)
    assert data[1]["item"]["type"] == "function_call" and data[1]["item"]["id"].startswith("fc_")
    assert data[3]["item"]["output"] == [{"type": "input_text", "text": "3 hits"}]
    assert data[3]["item"]["id"].startswith("fco_")
    completed = data[-1]["response"]["output"]
    assert completed[1] == {"type": "function_call_output", "call_id": "call_1",
                            "output": [{"type": "input_text", "text": "3 hits"}]}


def test_streamed_failure(server: RunningServer) -> None:
    with server.client.stream("POST", "/v1/responses", json={"input": "explode", "stream": True}) as response:
        raw = b"".join(response.iter_raw()).decode("ascii")
    kinds = [block.split("\n")[0] for block in raw.split("\n\n") if block]
    assert kinds == ["event: response.created", "event: response.failed"]
    failed = json.loads(raw.split("\n\n")[1].split("\n")[1][6:])["response"]
    assert failed["status"] == "failed" and failed["error"] == {"message": "backend exploded", "type": "server_error"}
    assert server.client.get(f"/v1/responses/{failed['id']}").json()["status"] == "failed"


def test_plain_failure_is_a_500_envelope(server: RunningServer) -> None:
    response = server.client.post("/v1/responses", json={"input": "explode"})
    assert response.status_code == 500
    assert response.json() == {"error": {"message": "Internal server error: backend exploded",
                                         "type": "server_error", "param": None, "code": None}}


def test_store_false_and_conversations(server: RunningServer) -> None:
    gone = server.client.post("/v1/responses", json={"input": "x", "store": "false"}).json()
    assert server.client.get(f"/v1/responses/{gone['id']}").status_code == 404
    first = server.client.post("/v1/responses", json={"input": "c1", "conversation": "topic"})
    second = server.client.post("/v1/responses", json={"input": "c2", "conversation": "topic"})
    assert second.headers["x-hermes-session-id"] == first.headers["x-hermes-session-id"]
    # store:false chains from the conversation but does not advance it.
    third = server.client.post("/v1/responses", json={"input": "c3", "conversation": "topic", "store": False})
    assert third.headers["x-hermes-session-id"] == first.headers["x-hermes-session-id"]
    assert len(_stored(server, second.json()["id"])["conversation_history"]) == 4
    # Deleting the latest response forgets the conversation: the next request starts a new session.
    server.client.delete(f"/v1/responses/{second.json()['id']}")
    fresh = server.client.post("/v1/responses", json={"input": "c4", "conversation": "topic"})
    assert fresh.headers["x-hermes-session-id"] != first.headers["x-hermes-session-id"]


def test_idempotency_key_reuses_the_turn_but_mints_a_new_id(server: RunningServer) -> None:
    headers = {"Idempotency-Key": "idem-1"}
    one = server.client.post("/v1/responses", json={"input": "idem"}, headers=headers).json()
    two = server.client.post("/v1/responses", json={"input": "idem"}, headers=headers).json()
    assert one["id"] != two["id"] and one["output"] == two["output"]
    assert server.client.get(f"/v1/responses/{two['id']}").status_code == 200


@pytest.mark.parametrize("body, status, error", [
    ({}, 400, {"message": "Missing 'input' field", "param": None, "code": None}),
    ({"input": 5}, 400, {"message": "'input' must be a string or array", "param": None, "code": None}),
    ({"input": ""}, 400, {"message": "No user message found in input", "param": None, "code": None}),
    ({"input": "x", "conversation": "c", "previous_response_id": "r"}, 400,
     {"message": "Cannot use both 'conversation' and 'previous_response_id'", "param": None, "code": None}),
    ({"input": "x", "previous_response_id": "resp_nope"}, 404,
     {"message": "Previous response not found: resp_nope", "param": None, "code": None}),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}, 400,
     {"message": "Inline image inputs are supported, but uploaded files and document inputs are not supported "
                 "on this endpoint.", "param": "input[0].content", "code": "unsupported_content_type"}),
    ({"input": "x", "conversation": {"a": 1}}, 400,
     {"message": "'conversation' must be a string", "param": "conversation", "code": None}),
    ({"input": "x", "instructions": 7}, 400,
     {"message": "'instructions' must be a string", "param": "instructions", "code": None}),
    (["x"], 400, {"message": "Request body must be a JSON object", "param": None, "code": None}),
])
def test_bad_requests(server: RunningServer, body: object, status: int, error: dict) -> None:
    response = server.client.post("/v1/responses", json=body)
    assert response.status_code == status
    assert response.json() == {"error": {"message": error["message"], "type": "invalid_request_error",
                                         "param": error["param"], "code": error["code"]}}


def test_invalid_json_unknown_ids_and_methods(server: RunningServer) -> None:
    assert server.client.post("/v1/responses", content=b"{").json() == {
        "error": {"message": "Invalid JSON in request body", "type": "invalid_request_error"}}
    for method in ("GET", "DELETE"):
        response = server.client.request(method, "/v1/responses/resp_nope")
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "Response not found: resp_nope"
    assert server.client.get("/v1/responses").status_code == 405
    assert server.client.put("/v1/responses/resp_x").status_code == 405
