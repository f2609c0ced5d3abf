"""Driving structured runs in tests: submit, poll, read the event stream (parsed strictly).

The run stream's framing is upstream's: `data: <json>\\n\\n` frames (no `event:` line,
no `id:`), `: keepalive\\n\\n`, and `: stream closed\\n\\n` as the last frame.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

TERMINAL = ("completed", "failed", "cancelled")

# A script for the script agent with the turns the run tests use.
RUN_SCRIPT = {"turns": [
    {"match": "approve", "steps": [
        {"delta": "Checking."},
        {"tool": "terminal", "args": {"command": "echo DROP TABLE t"}, "preview": "echo DROP TABLE t",
         "approval": {"pattern_key": "SQL DROP"}, "result": "DROP TABLE t"},
    ], "reply": "tool done"},
    {"match": "slow", "steps": [{"delta": "part one"}, {"sleep": 5}, {"delta": " part two"}]},
    {"match": "tool", "steps": [{"tool": "search", "args": {"q": "x"}, "preview": "search x", "result": "3 hits"}],
     "reply": "found"},
    {"match": "explode", "steps": [{"fail": "backend exploded"}]},
    {"reply": "plain answer"},
]}


def submit(client: httpx.Client, body: Any, headers: dict[str, str] | None = None) -> str:
    response = client.post("/v1/runs", json=body, headers=headers)
    assert response.status_code == 202, response.text
    return response.json()["run_id"]


def wait_status(client: httpx.Client, run_id: str, statuses: tuple[str, ...] = TERMINAL,
                timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/v1/runs/{run_id}").json()
        if status.get("status") in statuses or time.monotonic() > deadline:
            return status
        time.sleep(0.02)


def parse_run_frames(raw: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """The events and the comments of a complete run stream; AssertionError on any other framing."""
    assert raw.endswith(b"\n\n"), raw[-80:]
    events, comments = [], []
    for block in raw.split(b"\n\n")[:-1]:
        text = block.decode("ascii")  # ASCII-escaped JSON, as upstream writes it
        assert "\n" not in text, block
        if text.startswith(": "):
            comments.append(text[2:])
        else:
            assert text.startswith("data: "), block
            events.append(json.loads(text[6:]))
    return events, comments


def read_events(client: httpx.Client, run_id: str) -> tuple[httpx.Response, list[dict[str, Any]], list[str]]:
    """GET the run's events to the end: the response, its events and its comments."""
    with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
        raw = b"".join(response.iter_raw())
    if response.status_code != 200:
        return response, [], []
    events, comments = parse_run_frames(raw)
    return response, events, comments


def names(events: list[dict[str, Any]]) -> list[str]:
    return [event["event"] for event in events]
