"""D10: the official `openai` SDK's streaming helper (`client.responses.stream()`) against a real
server. Its accumulator puts each text delta into the message's content part, which only a
`response.content_part.added` creates; 0.19.0 never sends one, so the helper fails there with an
IndexError (and after a tool call it would refuse 0.19.0's final response, whose call lost its id).
hermes-server sends the part's events and the ids by default, and 0.19.0's stream exactly under
`--upstream-quirks`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.support.runs import RUN_SCRIPT
from tests.support.server import KEY, RunningServer, start_with_script

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

PART_EVENTS = ("response.content_part.added", "response.content_part.done")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("sdk-stream") / "home", RUN_SCRIPT)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def quirky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("sdk-stream-quirky") / "home", RUN_SCRIPT, "--upstream-quirks")
    yield srv
    srv.stop()


def _client(server: RunningServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)


def _frames(server: RunningServer, text: str) -> list[tuple[str, dict[str, Any]]]:
    with server.client.stream("POST", "/v1/responses", json={"input": text, "stream": True}) as response:
        raw = b"".join(response.iter_raw()).decode("ascii")
    frames = [block.split("\n") for block in raw.split("\n\n") if block]
    return [(lines[0][len("event: "):], json.loads(lines[1][len("data: "):])) for lines in frames]


def _sdk_stream(server: RunningServer, text: str, expected: str) -> None:
    with _client(server).responses.stream(model="hermes-agent", input=text) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == expected
    assert final.status == "completed" and final.output_text == expected


def test_the_sdk_stream_helper_collects_the_text_and_the_final_response(server: RunningServer) -> None:
    _sdk_stream(server, "hello", "plain answer")


def test_the_sdk_stream_helper_with_a_tool_call(server: RunningServer) -> None:
    """0.19.0's `response.completed` lists the call without the id its streamed item had, which the
    SDK refuses ('Completed response output identity changed'); D10 lists the id."""
    _sdk_stream(server, "tool please", "found")
    completed = _frames(server, "tool please")[-1][1]["response"]["output"][0]
    assert completed == {"type": "function_call", "name": "search", "arguments": '{"q": "x"}', "call_id": "call_1",
                         "id": completed["id"]}
    assert completed["id"].startswith("fc_")


def test_the_part_events_have_the_protocols_shape(server: RunningServer) -> None:
    frames = _frames(server, "hello")
    kinds = [kind for kind, _ in frames]
    assert kinds == ["response.created", "response.output_item.added", "response.content_part.added",
                     "response.output_text.delta", "response.output_text.done", "response.content_part.done",
                     "response.output_item.done", "response.completed"]
    item_id = frames[1][1]["item"]["id"]
    added, done = frames[2][1], frames[5][1]
    assert added == {"type": "response.content_part.added", "item_id": item_id, "output_index": 0,
                     "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []},
                     "sequence_number": 2}
    assert done == {"type": "response.content_part.done", "item_id": item_id, "output_index": 0,
                    "content_index": 0, "part": {"type": "output_text", "text": "plain answer", "annotations": []},
                    "sequence_number": 5}
    assert [data["sequence_number"] for _, data in frames] == list(range(len(frames)))


def test_the_part_follows_the_message_item_after_tool_items(server: RunningServer) -> None:
    frames = _frames(server, "tool please")
    message_index = next(data["output_index"] for kind, data in frames
                         if kind == "response.output_item.added" and data["item"]["type"] == "message")
    parts = [data for kind, data in frames if kind in PART_EVENTS]
    assert [p["output_index"] for p in parts] == [message_index, message_index] == [2, 2]


def test_a_failed_turn_sends_no_part(server: RunningServer) -> None:
    assert [kind for kind, _ in _frames(server, "explode")] == ["response.created", "response.failed"]


def test_upstream_quirks_send_0190s_events(quirky: RunningServer) -> None:
    assert [kind for kind, _ in _frames(quirky, "hello")] == [
        "response.created", "response.output_item.added", "response.output_text.delta",
        "response.output_text.done", "response.output_item.done", "response.completed"]
    frames = _frames(quirky, "tool please")
    assert not [kind for kind, _ in frames if kind in PART_EVENTS]
    assert [data["sequence_number"] for _, data in frames] == list(range(len(frames)))


def test_upstream_quirks_list_the_call_without_its_id(quirky: RunningServer) -> None:
    completed = _frames(quirky, "tool please")[-1][1]["response"]["output"][0]
    assert completed == {"type": "function_call", "name": "search", "arguments": '{"q": "x"}', "call_id": "call_1"}


@pytest.mark.parametrize(("text", "error"), [("hello", IndexError), ("tool please", IndexError)])
def test_under_upstream_quirks_the_sdk_helper_fails_as_against_0190(quirky: RunningServer, text: str,
                                                                    error: type[Exception]) -> None:
    with pytest.raises(error), _client(quirky).responses.stream(model="hermes-agent", input=text) as stream:
        for _ in stream:
            pass
