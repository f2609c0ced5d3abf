"""The protocol events of a streamed turn and their framing (chat/stream.py, http/sse.py).

Each protocol's encoder makes `StreamEvent`s; the queue frames them as that protocol's
stream writes them, byte for byte: the session stream's named events in UTF-8 (lone
surrogates replaced), OpenAI's unnamed chunks, the tool and Responses events ASCII-escaped,
and chat completions' literal `[DONE]`.
"""

from __future__ import annotations

import asyncio

from hermes_server.agents.base import Delta, Progress, ToolEvent, TurnResult
from hermes_server.chat.completion_stream import DONE
from hermes_server.chat.stream import Encoder, StreamEvent
from hermes_server.domain.usage import Usage
from hermes_server.http.sse import KEEPALIVE_FRAME, EventQueue, frame


def test_named_events_in_utf8_with_lone_surrogates_replaced() -> None:
    event = StreamEvent({"delta": "é\ud800"}, "assistant.delta")
    assert frame(event, ascii_only=False) == 'event: assistant.delta\ndata: {"delta": "é\ufffd"}\n\n'.encode()


def test_ascii_escaped_named_and_unnamed_events() -> None:
    assert frame(StreamEvent({"t": "é"}, "hermes.tool.progress"), ascii_only=True) == (
        b'event: hermes.tool.progress\ndata: {"t": "\\u00e9"}\n\n')
    assert frame(StreamEvent({"t": "é"}), ascii_only=True) == b'data: {"t": "\\u00e9"}\n\n'


def test_done_is_sent_as_it_is() -> None:
    assert frame(DONE, ascii_only=True) == b"data: [DONE]\n\n"


def test_the_queue_frames_as_events_come_and_drops_them_once_the_client_is_gone() -> None:
    async def main() -> list[bytes]:
        queue = EventQueue(ascii_only=True)
        queue.put(StreamEvent({"n": 1}))
        frames = queue.frames(0.05)
        got = [await anext(frames), await anext(frames)]  # the event, then a keepalive when idle
        await frames.aclose()
        assert not queue.listening
        queue.put(StreamEvent({"n": 2}))  # the client has gone: nothing is queued
        again = queue.frames(0.01)
        got.append(await anext(again))
        await again.aclose()
        return got

    assert asyncio.run(main()) == [b'data: {"n": 1}\n\n', KEEPALIVE_FRAME, KEEPALIVE_FRAME]


def test_each_agent_event_reaches_the_method_of_its_type() -> None:
    class Seen(Encoder):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def delta(self, event: Delta) -> None:
            self.seen.append("delta")

        def tool(self, event: ToolEvent) -> None:
            self.seen.append(f"tool {event.kind}")

        def progress(self, event: Progress) -> None:
            self.seen.append("progress")

    encoder = Seen()
    for event in (Delta("a"), ToolEvent("started", "t"), Progress("p"), ToolEvent("failed", "t"),
                  TurnResult("a", Usage())):
        encoder.event(event)
    assert encoder.seen == ["delta", "tool started", "progress", "tool failed"]
