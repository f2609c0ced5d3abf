"""0.20+'s `runtime` block on session chat, on a real server, each behaviour naming its source in
/work/shared/spec/hermes-after-0.19.md: §1.4 "POST /api/sessions/{id}/chat (changed)" [R V2 §B.9] and
"POST /api/sessions/{id}/chat/stream (changed)" [R V2 §B.10]; §4 item 5."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.db import connect, session_row
from tests.support.server import RunningServer, start_server
from tests.support.sse import events, stream_chat

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

MODEL = "hermes-agent"
GLOBAL = {"provider": "echo", "model": MODEL, "route_source": "global"}


@pytest.fixture(scope="module", params=["0.20.4", "0.21.2"])
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("runtime") / "hermes", "--hermes-version", request.param)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("old") / "hermes")
    yield srv
    srv.stop()


def _create(server: RunningServer, session_id: str) -> None:
    assert server.client.post("/api/sessions", json={"id": session_id}).status_code == 201


def _chat(server: RunningServer, session_id: str, **body: Any) -> dict[str, Any]:
    answer = server.client.post(f"/api/sessions/{session_id}/chat", json={"message": "hi", **body})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _stream(server: RunningServer, session_id: str, **body: Any) -> dict[str, dict[str, Any]]:
    response, frames = stream_chat(server.client, session_id, {"message": "hi", **body})
    assert response.status_code == 200
    return dict(events(frames))


def test_0_19_0_has_no_runtime(old: RunningServer) -> None:
    """§1.4: `runtime` is new after 0.19.0."""
    _create(old, "old-rt")
    assert list(_chat(old, "old-rt")) == ["object", "session_id", "message", "usage"]
    for name, data in _stream(old, "old-rt").items():
        assert "runtime" not in data, name


def test_chat_answer_ends_with_the_global_runtime(newer: RunningServer) -> None:
    """V2 §B.9: `runtime` after `usage`; `provider`, `model`, `route_source` always; `global` when nothing routes it."""
    _create(newer, "rt-global")
    body = _chat(newer, "rt-global")
    assert list(body) == ["object", "session_id", "message", "usage", "runtime"]
    assert body["runtime"] == GLOBAL


def test_requested_runtime_is_echoed(newer: RunningServer) -> None:
    """V2 §B.9: `requested` only when the request named a runtime (`model`/`model_id`, `provider`/`provider_id`,
    `provider::model`)."""
    _create(newer, "rt-req")
    assert _chat(newer, "rt-req", model="other-model")["runtime"] == {
        **GLOBAL, "requested": {"provider": None, "model": "other-model"}}
    assert _chat(newer, "rt-req", model_id="acme::m1")["runtime"]["requested"] == {"provider": "acme", "model": "m1"}
    assert _chat(newer, "rt-req", provider_id="echo")["runtime"]["requested"] == {"provider": "echo", "model": None}
    assert "requested" not in _chat(newer, "rt-req", model=5, provider="  ")["runtime"]


def test_stream_events_carry_the_runtime(newer: RunningServer) -> None:
    """V2 §B.10: `run.started`, `assistant.completed` and `run.completed` gain `runtime`; other events do not."""
    _create(newer, "rt-stream")
    seen = _stream(newer, "rt-stream")
    for name in ("run.started", "assistant.completed", "run.completed"):
        assert seen[name]["runtime"] == GLOBAL, name
    assert list(seen["run.started"])[:2] == ["user_message", "runtime"]
    assert list(seen["assistant.completed"])[6] == "runtime"
    assert list(seen["run.completed"])[5] == "runtime"
    for name in ("message.started", "done"):
        assert "runtime" not in seen[name]


def test_a_session_model_lock_routes_the_turn(newer: RunningServer) -> None:
    """V2 §B.9/B.11: after `POST …/model`, turns report `route_source: session_model_lock` and the lock as
    `confirmed`; the lock's model answers (and is the stored session model)."""
    _create(newer, "rt-lock")
    assert newer.client.post("/api/sessions/rt-lock/model", json={"model": MODEL}).status_code == 200
    locked = {"provider": "echo", "model": MODEL, "route_source": "session_model_lock", "model_lock": "confirmed"}
    assert _chat(newer, "rt-lock")["runtime"] == locked
    seen = _stream(newer, "rt-lock")
    assert seen["run.completed"]["runtime"] == locked
    assert session_row(newer.db_path, "rt-lock")["model"] == MODEL


@pytest.mark.parametrize("config", ["not json", "[1]", '{"browser_model_lock": 5}',
                                    '{"browser_model_lock": {"model": 5, "provider": "echo", "confirmed": true}}',
                                    '{"browser_model_lock": {"model": "m", "provider": "echo"}}'])
def test_a_broken_lock_is_no_lock(newer: RunningServer, config: str) -> None:
    """A `model_config` another process wrote badly never fails a turn: no confirmed lock, `global`."""
    sid = f"rt-bad-{abs(hash(config))}"
    _create(newer, sid)
    conn = connect(newer.db_path)
    try:
        conn.execute("UPDATE sessions SET model_config = ? WHERE id = ?", (config, sid))
    finally:
        conn.close()
    assert _chat(newer, sid)["runtime"] == GLOBAL


def test_require_model_lock_refuses_what_cannot_be_routed(newer: RunningServer) -> None:
    """V2 §B.9 / §B.11: `require_model_lock` with no model/provider → 400 `missing_model`; with one that cannot
    be routed → 409 `model_lock_unavailable`; with a routable one the turn runs."""
    _create(newer, "rt-require")
    for body, status, code in (({}, 400, "missing_model"), ({"model": "elsewhere"}, 409, "model_lock_unavailable"),
                               ({"provider": "acme"}, 409, "model_lock_unavailable")):
        answer = newer.client.post("/api/sessions/rt-require/chat",
                                   json={"message": "hi", "require_model_lock": True, **body})
        assert answer.status_code == status and answer.json()["error"]["code"] == code, body
        response, _ = stream_chat(newer.client, "rt-require", {"message": "hi", "require_model_lock": "true", **body})
        assert response.status_code == status
    assert _chat(newer, "rt-require", model=MODEL, require_model_lock=True)["runtime"]["route_source"] == "global"
    assert _chat(newer, "rt-require", require_model_lock=False)["runtime"] == GLOBAL


def test_0_19_0_ignores_require_model_lock(old: RunningServer) -> None:
    """§1.4: the lock fields are new after 0.19.0."""
    _create(old, "old-require")
    assert _chat(old, "old-require", require_model_lock=True, model="elsewhere")["message"]["role"] == "assistant"
