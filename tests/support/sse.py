"""Reading hermes-server's chat stream in tests: raw bytes off a real socket, parsed strictly.

The parser accepts only upstream's framing (`event: <name>\\ndata: <json>\\n\\n` and
`: keepalive\\n\\n`), so a stray `id:`/`retry:` field, a CRLF separator or a
multi-line data field fails the test instead of being tolerated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Frame:
    """One SSE frame: an event (name and decoded data) or a comment."""

    name: str | None
    data: dict[str, Any] | None
    comment: str | None
    raw: bytes


def parse_frames(raw: bytes) -> list[Frame]:
    """Split a complete body into frames; raises AssertionError on any other framing."""
    assert raw.endswith(b"\n\n") or not raw, raw[-80:]
    frames = []
    for block in raw.split(b"\n\n")[:-1]:
        lines = block.decode("utf-8").split("\n")
        if len(lines) == 1 and lines[0].startswith(": "):
            frames.append(Frame(None, None, lines[0][2:], block + b"\n\n"))
            continue
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
        frames.append(Frame(lines[0][7:], json.loads(lines[1][6:]), None, block + b"\n\n"))
    return frames


def events(frames: list[Frame]) -> list[tuple[str, dict[str, Any]]]:
    """The (name, data) pairs, keepalive comments left out."""
    return [(f.name, f.data) for f in frames if f.name is not None]


def stream_chat(client: httpx.Client, session_id: str, body: dict[str, Any],
                headers: dict[str, str] | None = None) -> tuple[httpx.Response, list[Frame]]:
    """POST …/chat/stream and read the whole body; returns the response and its frames (empty if not SSE)."""
    with client.stream("POST", f"/api/sessions/{session_id}/chat/stream", json=body, headers=headers) as response:
        if response.headers.get("content-type") != "text/event-stream":
            response.read()
            return response, []
        raw = b"".join(response.iter_raw())
    return response, parse_frames(raw)
