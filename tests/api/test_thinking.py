"""`tool.progress` `_thinking` on the session chat stream: once per model call with text, after
that call's deltas and before its tools, as 0.19.0's agent reports it; never on chat completions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http import create_session
from tests.support.server import RunningServer, start_server, start_with_script
from tests.support.sse import events, stream_chat

pytestmark = pytest.mark.in_process

LONG = "<think>private musing</think>\n  " + "y" * 700
SCRIPT = {"turns": [
    {"match": "tool", "steps": [
        {"delta": "plan "}, {"delta": "Checking now."}, {"reasoning": "never shown"},
        {"tool": "terminal", "args": {"command": "ls"}, "result": "ok"},
        {"tool": "terminal", "args": {"command": "pwd"}, "result": "/"},
        {"delta": "\n\nTOOL-DONE: ok"},
    ], "reply": "TOOL-DONE: ok"},
    {"match": "long", "reply": LONG},
    {"match": "silent", "reply": "<think></think>"},
]}


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("echo") / "hermes")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_with_script(tmp_path_factory.mktemp("script") / "hermes", SCRIPT)
    yield server
    server.stop()


def names(frames: list) -> list[str]:
    return [name for name, _ in events(frames)]


def test_echo_reports_its_reply_once_before_completion(echo: RunningServer) -> None:
    create_session(echo, "E")
    _, frames = stream_chat(echo.client, "E", {"message": "hello"})
    evs = events(frames)
    progress = [(i, data) for i, (name, data) in enumerate(evs) if name == "tool.progress"]
    assert len(progress) == 1
    index, data = progress[0]
    assert list(data) == ["message_id", "tool_name", "delta", "session_id", "run_id", "seq", "ts"]
    assert (data["tool_name"], data["delta"]) == ("_thinking", "ECHO-REPLY to: hello [n=1]")
    assert data["message_id"] == evs[1][1]["message"]["id"]
    assert names(frames)[index - 1] == "assistant.delta" and names(frames)[index + 1] == "assistant.completed"


def test_each_model_call_with_text_is_reported_before_its_tools(scripted: RunningServer) -> None:
    create_session(scripted, "T")
    _, frames = stream_chat(scripted.client, "T", {"message": "tool please"})
    assert names(frames) == [
        "run.started", "message.started", "assistant.delta", "assistant.delta", "tool.progress",
        "tool.started", "tool.completed", "tool.started", "tool.completed", "assistant.delta",
        "tool.progress", "assistant.completed", "run.completed", "done"]
    thinking = [data["delta"] for name, data in events(frames) if name == "tool.progress"]
    assert thinking == ["plan Checking now.", "TOOL-DONE: ok"]  # a tool-call-only call reports nothing


def test_tags_removed_and_cut_at_500(scripted: RunningServer) -> None:
    create_session(scripted, "L")
    _, frames = stream_chat(scripted.client, "L", {"message": "long"})
    (delta,) = [data["delta"] for name, data in events(frames) if name == "tool.progress"]
    assert delta == ("private musing\n  " + "y" * 700)[:500]


def test_nothing_left_after_the_tags_reports_nothing(scripted: RunningServer) -> None:
    create_session(scripted, "Q")
    _, frames = stream_chat(scripted.client, "Q", {"message": "silent"})
    assert "tool.progress" not in names(frames)


def test_chat_completions_streams_carry_no_thinking(echo: RunningServer) -> None:
    body = {"model": "hermes-agent", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with echo.client.stream("POST", "/v1/chat/completions", json=body) as response:
        raw = b"".join(response.iter_raw())
    assert raw.endswith(b"data: [DONE]\n\n")
    assert b"_thinking" not in raw and b"progress" not in raw
