"""The agents behind chat: `openai` against a fake OpenAI-compatible server (streamed, usage
mapped, errors mapped), startup checks of `--agent`, and the pure rules of the agents package."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_server.agents.base import SYSTEM_PROMPT, TurnRequest
from hermes_server.agents.echo import echo_reply
from hermes_server.agents.openai import map_usage
from hermes_server.agents.script import parse_script
from hermes_server.domain.compression import continuation_id, needs_rotation
from tests.fake_openai import FakeOpenAI
from tests.support.http import create_session as create
from tests.support.server import RunningServer, free_port, start_server
from tests.support.sse import events, stream_chat

pytestmark = pytest.mark.in_process


# -- pure rules ------------------------------------------------------------------

def test_echo_reply_depends_only_on_text_and_history_length() -> None:
    turn = TurnRequest("s", [{"role": "user", "content": "x"}] * 4, "  many   spaces\n here ")
    assert echo_reply(turn) == "ECHO-REPLY to: many spaces here [n=5]"
    assert echo_reply(TurnRequest("other", [], "y" * 300)) == f"ECHO-REPLY to: {'y' * 200} [n=1]"


@pytest.mark.parametrize("active, limit, rotate", [
    (0, 1, False), (2, None, False), (2, 4, False), (3, 4, True), (4, 4, True), (1, 2, True), (8, 10, False)])
def test_rotation_rule(active: int, limit: int | None, rotate: bool) -> None:
    assert needs_rotation(active, limit) is rotate


def test_continuation_ids() -> None:
    assert re.fullmatch(r"\d{8}_\d{6}_abcdef", continuation_id(1_700_000_000.5, lambda: "abcdef"))
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", continuation_id(0))


def test_usage_mapping() -> None:
    usage = map_usage({"prompt_tokens": 11, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 3},
                       "completion_tokens_details": {"reasoning_tokens": 2}})
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (11, 7, 3, 2)
    assert map_usage({"prompt_tokens": -1, "completion_tokens": "7", "prompt_tokens_details": None}).public() == {
        "input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


@pytest.mark.parametrize("script, problem", [
    ([], "non-empty list"),
    ({"turns": [{"steps": [{"delta": "a", "sleep": 1}]}]}, "exactly one of"),
    ([{"steps": [{"sleep": -1}]}], "non-negative"),
    ([{"reply": 5}], "reply must be a string or null"),
    ([{"usage": {"input_tokens": "5"}}], "usage takes integer"),
    ([{"steps": [{"tool": "t", "args": []}]}], "tool args must be an object"),
    ([{"match": 1}], "match must be a string"),
])
def test_script_validation(script: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_script(script)


# -- startup checks ----------------------------------------------------------------

@pytest.mark.parametrize("flags, message", [
    (["--agent", "openai"], "--agent openai needs --agent-base-url"),
    (["--agent", "script"], "--agent script needs --agent-script FILE"),
    (["--agent", "script", "--agent-script", "{missing}"], "cannot read agent script"),
    (["--agent", "script", "--agent-script", "{bad}"], "invalid agent script"),
    (["--keepalive-seconds", "0"], "--keepalive-seconds must be greater than 0"),
    (["--compress-after-messages", "0"], "--compress-after-messages must be at least 1"),
])
def test_unusable_agent_options_stop_the_server(tmp_path: Path, flags: list[str], message: str) -> None:
    (tmp_path / "bad.json").write_text('{"turns": [{"reply": 5}]}')
    flags = [f.format(missing=tmp_path / "none.json", bad=tmp_path / "bad.json") for f in flags]
    result = subprocess.run(
        [sys.executable, "-m", "hermes_server", "serve", "--home", str(tmp_path / "h"), "--port", str(free_port()),
         "--api-key", "k" * 20, *flags], capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and message in result.stderr


# -- the openai agent, over real sockets ----------------------------------------------

@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as backend:
        yield backend


@pytest.fixture(scope="module")
def openai_server(fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("openai") / "hermes", "--agent", "openai",
                       "--agent-base-url", fake.base_url + "/", "--agent-model", "req-model",
                       "--agent-api-key", "backend-key-0123")
    yield srv
    srv.stop()


def test_openai_turns_stream_and_map_usage(openai_server: RunningServer, fake: FakeOpenAI) -> None:
    create(openai_server, "O")
    _response, frames = stream_chat(openai_server.client, "O", {"message": "hello fake", "system_message": "be brief"})
    evs = events(frames)
    assert [d["delta"] for name, d in evs if name == "assistant.delta"] == ["FAKE:", " ", "hello fake"]
    by_name = dict(evs)
    assert by_name["assistant.completed"]["content"] == "FAKE: hello fake"
    assert by_name["run.completed"]["usage"] == {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}
    sent = fake.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer backend-key-0123"
    assert (sent["body"]["model"], sent["body"]["stream"], sent["body"]["stream_options"]) == (
        "req-model", True, {"include_usage": True})
    assert sent["body"]["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT + "\n\nbe brief"}, {"role": "user", "content": "hello fake"}]

    session = openai_server.client.get("/api/sessions/O").json()["session"]
    assert (session["model"], session["input_tokens"], session["output_tokens"], session["cache_read_tokens"],
            session["reasoning_tokens"], session["api_call_count"]) == ("fake-model-1", 11, 7, 3, 2, 1)

    reply = openai_server.client.post("/api/sessions/O/chat", json={"message": "second"}).json()
    assert reply["message"]["content"] == "FAKE: second" and reply["usage"]["total_tokens"] == 18
    assert fake.requests[-1]["body"]["messages"][1:] == [
        {"role": "user", "content": "hello fake"}, {"role": "assistant", "content": "FAKE: hello fake"},
        {"role": "user", "content": "second"}]
    rows = openai_server.client.get("/api/sessions/O/messages").json()["data"]
    assert [(m["role"], m["finish_reason"]) for m in rows] == [
        ("user", None), ("assistant", "stop"), ("user", None), ("assistant", "stop")]


def test_openai_content_not_reasoning_becomes_thinking_progress(openai_server: RunningServer) -> None:
    # As upstream: `_thinking` carries the model call's content; its reasoning is only stored.
    create(openai_server, "T")
    _, frames = stream_chat(openai_server.client, "T", {"message": "think first"})
    progress = [d for name, d in events(frames) if name == "tool.progress"]
    assert [(p["tool_name"], p["delta"]) for p in progress] == [("_thinking", "FAKE: think first")]
    assert openai_server.client.get("/api/sessions/T/messages").json()["data"][1]["reasoning"] == "Let me think."


@pytest.mark.parametrize("message, text", [
    ("status-401", "Model backend returned HTTP 401: Incorrect API key provided: sk-pro...6789"),
    ("status-500", "Model backend returned HTTP 500: upstream exploded"),
    ("garbage", "Model backend sent an invalid stream chunk"),
])
def test_openai_errors_are_mapped(openai_server: RunningServer, message: str, text: str) -> None:
    sid = "X" + message
    create(openai_server, sid)
    r = openai_server.client.post(f"/api/sessions/{sid}/chat", json={"message": message})
    assert (r.status_code, r.json()) == (500, {"error": {"message": text, "type": "server_error",
                                                         "param": None, "code": None}})
    _, frames = stream_chat(openai_server.client, sid, {"message": message})
    assert [(name, d.get("message")) for name, d in events(frames)][-2:] == [("error", text), ("done", None)]
    assert openai_server.client.get(f"/api/sessions/{sid}").json()["session"]["api_call_count"] == 0


def test_unreachable_backend(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    srv = start_server(tmp_path / "hermes", "--agent", "openai", "--agent-base-url", base)
    try:
        create(srv, "U")
        r = srv.client.post("/api/sessions/U/chat", json={"message": "anyone?"})
        assert r.status_code == 500
        assert r.json()["error"]["message"].startswith(f"Model backend at {base}/chat/completions is unreachable")
    finally:
        srv.stop()
