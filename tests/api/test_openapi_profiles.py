"""/openapi.json by version profile: a newer profile documents what it serves (its added routes, and
what its additions change on 0.19.0's: message paging, the chat `runtime` block, the gateway 401,
the session flags, steer's refusals, session-stream runs, 0.21.2's durable Idempotency-Key and its
capability), its real answers conform to it, and 0.19.0's document is the bytes it was (issue 20).

Sources: /work/shared/spec/hermes-after-0.19.md, as each row of docs/versions.md names them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from hermes_server.app import build_routes
from hermes_server.domain.profiles import PROFILES
from tests.support.openapi import resolved, schema_errors
from tests.support.runs import submit, wait_status
from tests.support.server import RunningServer, start_server
from tests.support.sse import parse_frames

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

NEWER = ("0.20.4", "0.21.2")
# sha256 of the default (0.19.0) server's /openapi.json. A change here changes 0.19.0's answer: only a
# fix of a 0.19.0 fact may, and then say so. (Last changed when request bodies were typed as what a
# client should send, operations got their names, descriptions and per-route 400s, and a run's
# events were described as SSE frames: the same answers, described for docs/api.md and generators.)
DOCUMENT_0_19 = "9572e19f73cc8e31243eb81e990ab43bb3e2ddeccdc987d2f5b6008919fc378b"


@pytest.fixture(scope="module", params=NEWER)
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("profile") / "hermes", "--hermes-version", request.param)
    srv.version = request.param  # type: ignore[attr-defined]
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def document(newer: RunningServer) -> dict[str, Any]:
    answer = httpx.get(newer.url + "/openapi.json", timeout=10)
    assert answer.status_code == 200
    return answer.json()


def _operation(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    return resolved(document["paths"][path][method], document)


def test_the_default_document_is_0_19_0s_bytes(tmp_path: Path) -> None:
    """§0: 0.19.0 stays the default, byte for byte; its document names none of the newer additions."""
    srv = start_server(tmp_path / "hermes")
    try:
        body = httpx.get(srv.url + "/openapi.json", timeout=10).content
    finally:
        srv.stop()
    assert hashlib.sha256(body).hexdigest() == DOCUMENT_0_19
    for name in (b"pagination", b"message_order", b"\"Runtime\"", b"/model/options", b"/steer", b"gateway_auth"):
        assert name not in body, name


def test_the_document_lists_exactly_the_profiles_operations(newer: RunningServer, document: dict[str, Any]) -> None:
    served = {(route.template, method) for route in build_routes(PROFILES[newer.version])  # type: ignore[attr-defined]
              for method in route.methods}
    assert {(path, method.upper()) for path, item in document["paths"].items() for method in item} == served
    resolved(document["paths"], document)  # every $ref resolves (a missing one is a KeyError)


def test_message_paging_is_documented(document: dict[str, Any]) -> None:
    """§1.4 "GET /api/sessions/{id}/messages" [R V2 §B.7]: limit, offset, order; the pagination
    block; 400 invalid_pagination."""
    op = _operation(document, "/api/sessions/{session_id}/messages", "get")
    query = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    assert set(query) == {"limit", "offset", "order"}
    assert "500" in query["limit"]["description"] and "latest" in query["order"]["description"]
    assert "invalid_pagination" in op["responses"]["400"]["description"]
    page = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert page["properties"]["pagination"]["required"] == ["limit", "offset", "order", "returned"]
    assert "pagination" in page["required"]


def test_a_message_page_conforms(newer: RunningServer, document: dict[str, Any]) -> None:
    sid = "openapi-page"
    assert newer.client.post("/api/sessions", json={"id": sid}).status_code == 201
    assert newer.client.post(f"/api/sessions/{sid}/chat", json={"message": "hi"}).status_code == 200
    page = newer.client.get(f"/api/sessions/{sid}/messages?limit=1&order=latest").json()
    assert page["pagination"] == {"limit": 1, "offset": 0, "order": "latest", "returned": 1}
    assert schema_errors(document, "MessageList", page) == []
    refused = newer.client.get(f"/api/sessions/{sid}/messages?order=sideways")
    assert refused.status_code == 400 and schema_errors(document, "Error", refused.json()) == []


def test_the_chat_runtime_block_is_documented_and_answered(newer: RunningServer, document: dict[str, Any]) -> None:
    """§1.4 "POST /api/sessions/{id}/chat (changed)" [R V2 §B.9, §B.10]: `runtime` on the answer;
    `require_model_lock` and 409 model_lock_unavailable."""
    for path in ("/api/sessions/{session_id}/chat", "/api/sessions/{session_id}/chat/stream"):
        op = _operation(document, path, "post")
        assert "model_lock_unavailable" in op["responses"]["409"]["description"]
        assert "require_model_lock" in op["requestBody"]["content"]["application/json"]["schema"]["properties"]
    chat = _operation(document, "/api/sessions/{session_id}/chat", "post")
    answer_schema = chat["responses"]["200"]["content"]["application/json"]["schema"]
    assert "runtime" in answer_schema["required"]
    assert answer_schema["properties"]["runtime"]["properties"]["route_source"]["enum"] == ["global",
                                                                                            "session_model_lock"]
    sid = "openapi-runtime"
    assert newer.client.post("/api/sessions", json={"id": sid}).status_code == 201
    answer = newer.client.post(f"/api/sessions/{sid}/chat", json={"message": "hi", "model": "anything"}).json()
    assert answer["runtime"]["route_source"] == "global" and answer["runtime"]["requested"]["model"] == "anything"
    assert schema_errors(document, "ChatCompletion", answer) == []


def test_the_added_routes_are_documented_and_their_answers_conform(newer: RunningServer,
                                                                    document: dict[str, Any]) -> None:
    """§1.4 GET /api/model/options [R V2 §E, V4], POST /api/sessions/{id}/model [M #70950; R V2 §B.11],
    POST /v1/runs/{id}/steer [M #85226]."""
    assert _operation(document, "/api/model/options", "get")["parameters"][0]["name"] == "refresh"
    assert "409" in _operation(document, "/api/sessions/{session_id}/model", "post")["responses"]
    assert "200" in _operation(document, "/v1/runs/{run_id}/steer", "post")["responses"]
    options = newer.client.get("/api/model/options").json()
    assert schema_errors(document, "ModelOptions", options) == []
    sid = "openapi-lock"
    assert newer.client.post("/api/sessions", json={"id": sid}).status_code == 201
    lock = newer.client.post(f"/api/sessions/{sid}/model", json={"model": options["model"]}).json()
    assert schema_errors(document, "ModelLock", lock) == []


def test_the_gateway_401_is_documented(newer: RunningServer, document: dict[str, Any]) -> None:
    """§1.3 "Auth 401 envelope" [M #70169; R V2, V4]."""
    described = _operation(document, "/api/sessions", "get")["responses"]["401"]["description"]
    assert "gateway_auth_failed" in described and "gateway_auth_error" in described
    answer = httpx.get(newer.url + "/api/sessions")
    assert answer.json()["error"]["code"] == "gateway_auth_failed"


def test_stop_is_documented_as_the_profile_answers_it(newer: RunningServer, document: dict[str, Any]) -> None:
    """§1.4 "POST /v1/runs/{id}/stop (0.21, V3)" [B]: 0.21.2 answers a finished run with its status
    and one not live here with 409 run_not_active; 0.20.4 as 0.19.0 does."""
    responses = _operation(document, "/v1/runs/{run_id}/stop", "post")["responses"]
    if newer.version == "0.21.2":  # type: ignore[attr-defined]
        assert "run_not_active" in responses["409"]["description"]
        assert responses["200"]["content"]["application/json"]["schema"]["properties"]["status"] == {"type": "string"}
    else:
        assert "409" not in responses
        assert responses["200"]["content"]["application/json"]["schema"]["properties"]["status"] == {
            "const": "stopping"}


def _is_0_21(server: RunningServer) -> bool:
    return server.version == "0.21.2"  # type: ignore[attr-defined]


def test_the_session_flags_are_documented_and_answered(newer: RunningServer, document: dict[str, Any]) -> None:
    """§1.4 "Session object" [R V2 §B.2]: `pinned`, `archived`, `hidden` on every session answer;
    "PATCH /api/sessions/{id} (changed, in 0.20.4)" [R V2 §B.5; M #86797]: the four boolean flags,
    400 `invalid_session_field`; "GET /api/sessions (changed)" [R V2 §B.1]: hidden left out, pinned
    back-filled, `has_more` over unpinned rows."""
    flags = ["pinned", "archived", "hidden"]
    for name in ("Session", "SessionListItem"):
        schema = document["components"]["schemas"][name]
        keys = list(schema["properties"])
        assert keys[keys.index("_lineage_root_id") + 1:keys.index("has_system_prompt")] == flags, name
        assert set(flags) <= set(schema["required"]) and schema["properties"]["pinned"] == {"type": "boolean"}
    patch = _operation(document, "/api/sessions/{session_id}", "patch")
    body = patch["requestBody"]["content"]["application/json"]["schema"]
    assert {body["properties"][flag]["type"] for flag in (*flags, "unread")} == {"boolean"}
    assert body["additionalProperties"] is False
    assert {"invalid_session_field", "unsupported_session_field"} <= set(
        re.findall(r"`(\w+)`", patch["responses"]["400"]["description"]))
    listed = _operation(document, "/api/sessions", "get")["responses"]["200"]["description"]
    assert "hidden" in listed and "pinned" in listed and "has_more" in listed

    sid = f"openapi-flags-{newer.port}"
    created = newer.client.post("/api/sessions", json={"id": sid})
    assert created.status_code == 201 and schema_errors(document, "SessionEnvelope", created.json()) == []
    pinned = newer.client.patch(f"/api/sessions/{sid}", json={"pinned": True, "unread": True})
    assert pinned.status_code == 200 and pinned.json()["session"]["pinned"] is True
    assert schema_errors(document, "SessionEnvelope", pinned.json()) == []
    assert schema_errors(document, "SessionEnvelope", newer.client.get(f"/api/sessions/{sid}").json()) == []
    forked = newer.client.post(f"/api/sessions/{sid}/fork", json={})
    assert forked.status_code == 201 and schema_errors(document, "SessionEnvelope", forked.json()) == []
    page = newer.client.get("/api/sessions?limit=1").json()
    assert page["data"] and schema_errors(document, "SessionList", page) == []
    refused = newer.client.patch(f"/api/sessions/{sid}", json={"hidden": "yes"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_session_field")
    assert schema_errors(document, "Error", refused.json()) == []
    # The body schema refuses what the server refuses.
    assert schema_errors(document, "PatchSession", {"hidden": "yes"})


def test_the_runs_idempotency_key_is_documented_as_the_profile_answers_it(
        newer: RunningServer, document: dict[str, Any]) -> None:
    """§1.4 "POST /v1/runs with durable Idempotency-Key" [R V4; V3 `_handle_runs`]: 0.21.2's header,
    the 202 with `replayed` and `Idempotency-Replayed`, 400 `invalid_idempotency_key`, 409
    `idempotency_key_conflict`; 0.20.4 ignores the header and documents none of it."""
    submit_op = _operation(document, "/v1/runs", "post")
    keys = [p for p in submit_op["parameters"] if p["name"] == "Idempotency-Key"]
    # Chat completions' key keeps 0.19.0's rules (a 300 s replay, any text): not the runs' component.
    completions = _operation(document, "/v1/chat/completions", "post")["parameters"]
    assert [p["schema"] for p in completions if p["name"] == "Idempotency-Key"] == [{"type": "string"}]
    if not _is_0_21(newer):
        assert keys == [] and "409" not in submit_op["responses"]
        answer = newer.client.post("/v1/runs", json={"input": "hi"}, headers={"Idempotency-Key": "k" * 300})
        assert answer.status_code == 202 and schema_errors(document, "RunStarted", answer.json()) == []
        assert "replayed" not in answer.json()
        return
    assert [(p["in"], p["schema"]["maxLength"]) for p in keys] == [("header", 255)]
    assert "idempotency_key_conflict" in submit_op["responses"]["409"]["description"]
    assert "invalid_idempotency_key" in submit_op["responses"]["400"]["description"]
    accepted = submit_op["responses"]["202"]
    assert "Idempotency-Replayed" in accepted["headers"]
    assert "replayed" in accepted["content"]["application/json"]["schema"]["required"]

    key = {"Idempotency-Key": f"openapi-{newer.port}"}
    first = newer.client.post("/v1/runs", json={"input": "hi"}, headers=key)
    assert first.status_code == 202 and first.json()["replayed"] is False
    again = newer.client.post("/v1/runs", json={"input": "hi"}, headers=key)
    assert again.json()["replayed"] is True and again.headers["Idempotency-Replayed"] == "true"
    other = newer.client.post("/v1/runs", json={"input": "another"}, headers=key)
    bad = newer.client.post("/v1/runs", json={"input": "hi"}, headers={"Idempotency-Key": "a b"})
    assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_key_conflict")
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_idempotency_key")
    for answer, schema in ((first, "RunStarted"), (again, "RunStarted"), (other, "Error"), (bad, "Error")):
        assert schema_errors(document, schema, answer.json()) == [], answer.text
    assert not Draft202012Validator(keys[0]["schema"]).is_valid("a b")
    assert Draft202012Validator(keys[0]["schema"]).is_valid(key["Idempotency-Key"])


def test_capabilities_conform_and_0_21_documents_runs_idempotency(newer: RunningServer,
                                                                   document: dict[str, Any]) -> None:
    """§1.3 "GET /v1/capabilities features" [R V4 full JSON]: 0.21.2's `runs_idempotency` object."""
    features = document["components"]["schemas"]["Capabilities"]["properties"]["features"]
    answer = newer.client.get("/v1/capabilities").json()
    assert schema_errors(document, "Capabilities", answer) == []
    if _is_0_21(newer):
        assert features["required"] == ["runs_idempotency", "browser_extension_control"]
        assert features["properties"]["runs_idempotency"]["required"] == ["supported", "durable",
                                                                         "retention_seconds"]
        assert answer["features"]["runs_idempotency"]["durable"] is True
    else:
        assert "properties" not in features and "runs_idempotency" not in answer["features"]


def test_steer_refusals_and_stream_runs_are_documented_and_answered(newer: RunningServer,
                                                                     document: dict[str, Any]) -> None:
    """§1.4 "/v1/runs family" [M #85226; R V2, V4]: steer's 409 `run_not_accepting_steer` /
    `steer_not_accepted` and 400 `invalid_steer_input` (not create's `session_exists`); "chat/stream
    (changed)" [R V2 §B.10, M #85226]: a session stream's run_id reaches GET /v1/runs/{id}."""
    steer = _operation(document, "/v1/runs/{run_id}/steer", "post")["responses"]
    assert {"run_not_accepting_steer", "steer_not_accepted"} <= set(re.findall(r"`(\w+)`", steer["409"]["description"]))
    assert "session_exists" not in steer["409"]["description"]
    assert "invalid_steer_input" in steer["400"]["description"]
    status_op = _operation(document, "/v1/runs/{run_id}", "get")
    assert "session stream" in status_op["parameters"][0]["description"]
    assert "session stream" in status_op["responses"]["200"]["description"]
    assert "pending_steer" in status_op["responses"]["200"]["content"]["application/json"]["schema"]["properties"]

    run_id = submit(newer.client, {"input": "hi"})
    done = wait_status(newer.client, run_id)
    refused = newer.client.post(f"/v1/runs/{run_id}/steer", json={"input": "late"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "run_not_accepting_steer")
    sid = f"openapi-stream-{newer.port}"
    assert newer.client.post("/api/sessions", json={"id": sid}).status_code == 201
    frames = parse_frames(newer.client.post(f"/api/sessions/{sid}/chat/stream", json={"message": "hi"}).content)
    started = next(frame.data for frame in frames if frame.name == "run.started")
    assert started is not None
    streamed = wait_status(newer.client, started["run_id"])
    assert streamed["session_id"] == sid
    for answer, schema in ((done, "RunStatus"), (streamed, "RunStatus"), (refused.json(), "Error")):
        assert schema_errors(document, schema, answer) == [], answer
