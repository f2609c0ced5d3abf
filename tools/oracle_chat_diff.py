#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: the same fork, chat and chat/stream sequences.

Usage (from the repository root):

    .venv/bin/python tools/oracle_chat_diff.py [--verbose] [--keep]

Starts the oracle (`../shared/oracle/start_upstream.sh`, API port 18860, mock model 18861)
and hermes-server with its default echo agent (18870), each on a fresh home, then sends
every request of `build_steps()` to both, in the same order, and compares:

- status, Content-Type, presence of the security headers, and the SSE headers
  (Cache-Control, X-Accel-Buffering), X-Hermes-Session-Id and X-Hermes-Session-Key;
- JSON bodies structurally, after normalising what legitimately differs:
  timestamps, generated ids (`api_…`, `run_…`, `msg_…`), the agent's text (the mock's
  `MOCK-REPLY …` and our `ECHO-REPLY …` both become `<reply>`), usage numbers, and
  the agent's own rewrite of `model` (`mock-model` after upstream's first turn);
- streams event by event: names in order, every payload's keys in order and its
  normalised values. A run of `assistant.delta` events counts as one (how the
  reply is cut is the agent's business); `tool.progress` `_thinking` events (each
  model call's content, reported by both agents) are compared like any other event,
  their text masked as the reply is, and counted.

Persisted message roles are compared through the `/messages` steps. Declared
deviations (D2 for `/messages` after a fork) are reported separately; with
`--upstream-quirks` (hermes-server started with that flag) they must be identical too.
Exit status 0 only when there is no unexpected difference. Usage numbers are also compared raw,
and the count of turns whose usage matched exactly is printed.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from oracle_common import (
    KEY,
    SECURITY_HEADER,
    Answer,
    Workbench,
    command_line,
    decoded_body,
    exchange,
    js,
    mask_agent_value,
    print_differences,
    rebased,
)

ORACLE_PORT, OURS_PORT = rebased({"oracle": 18860, "ours": 18870}).values()
SSE_HEADERS = ("content-type", "cache-control", "x-accel-buffering")
ID_HEADERS = ("x-hermes-session-id", "x-hermes-session-key")
TS_KEYS = {"started_at", "ended_at", "last_active", "timestamp", "ts"}
USAGE_KEYS = {"input_tokens", "output_tokens", "total_tokens"}
_ID_PATTERNS = (
    ("gen", re.compile(r"api_\d{6,12}_[0-9a-f]{8}")),
    ("cont", re.compile(r"\d{8}_\d{6}_[0-9a-f]{6}")),
    ("run", re.compile(r"run_[0-9a-f]{32}")),
    ("msg", re.compile(r"msg_[0-9a-f]{32}")),
)


@dataclass
class Step:
    """One request, sent identically to both servers."""

    name: str
    method: str
    path: str
    body: Any = None  # JSON-encoded unless bytes
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = False
    deviation: str | None = None


def request(port: int, step: Step) -> Answer:
    body = step.body if isinstance(step.body, bytes) or step.body is None else js(step.body)
    return exchange(port, step.method, step.path, body, [("Authorization", f"Bearer {KEY}"), *step.headers.items()])


class Normaliser:
    """Per side: ids in order of first appearance, and what is agent-specific."""

    def __init__(self, side: str) -> None:
        self.side = side
        self.ids: dict[str, str] = {}
        self.thinking = 0

    def _id(self, kind: str, value: str) -> str:
        return self.ids.setdefault(value, f"<{kind}-{len(self.ids) + 1}>")

    def value(self, key: str | None, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.value(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(None, v) for v in value]
        value = mask_agent_value(key, value, timestamps=TS_KEYS, counters=USAGE_KEYS)
        if isinstance(value, str):
            for kind, pattern in _ID_PATTERNS:
                value = pattern.sub(lambda m, kind=kind: self._id(kind, m.group(0)), value)
        return value

    def stream(self, body: bytes) -> list[Any]:
        """Events as (name, keys, normalised payload); `seq` is checked (1, 2, …) then masked."""
        out: list[Any] = []
        numbered = 0
        for block in body.decode("utf-8").split("\n\n")[:-1]:
            if block.startswith(":"):
                out.append(("comment", block))
                continue
            name_line, data_line = block.split("\n")
            name, data = name_line[len("event: "):], json.loads(data_line[len("data: "):])
            numbered += 1
            data["seq"] = "<seq>" if data.get("seq") == numbered else f"<out of order: {data.get('seq')}>"
            if name == "tool.progress" and data.get("tool_name") == "_thinking":
                self.thinking += 1
            if name == "assistant.delta":
                data["delta"] = "<delta>"
                if out and out[-1][0] == "assistant.delta+":
                    continue
                name = "assistant.delta+"
            out.append((name, list(data), self.value(None, data)))
        return out

    def __call__(self, answer: Answer) -> dict[str, Any]:
        ctype = answer.headers.get("content-type", "")
        shape: dict[str, Any] = {
            "status": answer.status,
            "content-type": ctype,
            "secure": SECURITY_HEADER in answer.headers,
            **{h: self.value(None, answer.headers.get(h)) for h in ID_HEADERS},
        }
        if ctype == "text/event-stream":
            shape.update({h: answer.headers.get(h) for h in SSE_HEADERS})
            shape["events"] = self.stream(answer.body)
        else:
            shape["body"] = decoded_body(answer.body, self.value)
        return shape


def raw_usage(answer: Answer) -> Any:
    """The usage numbers of a chat answer or the run.completed of a stream, if any."""
    if answer.headers.get("content-type") == "text/event-stream":
        for block in answer.body.decode("utf-8").split("\n\n"):
            if block.startswith("event: run.completed"):
                return json.loads(block.split("\ndata: ", 1)[1])["usage"]
        return None
    try:
        return json.loads(answer.body).get("usage")
    except (ValueError, AttributeError):
        return None


def build_steps() -> list[Step]:
    steps: list[Step] = []

    def add(*args: Any, **kwargs: Any) -> None:
        steps.append(Step(*args, **kwargs))

    def post(name: str, path: str, body: Any, **kwargs: Any) -> None:
        add(name, "POST", path, body, **kwargs)

    # -- one session, turn by turn ---------------------------------------------------
    post("create S", "/api/sessions", {"id": "S", "title": "Chat seq", "system_prompt": "create-time"})
    post("T79 chat with key and instruction", "/api/sessions/S/chat",
         {"message": "hello there", "system_message": "be brief"}, headers={"X-Hermes-Session-Key": "mem:1"})
    add("get S after chat", "GET", "/api/sessions/S")
    add("messages S after chat", "GET", "/api/sessions/S/messages")
    post("second chat uses history", "/api/sessions/S/chat", {"message": "second", "instructions": "terse"})
    post("T100 stream with key", "/api/sessions/S/chat/stream", {"message": "stream me"},
         headers={"X-Hermes-Session-Key": "mk"}, stream=True)
    add("messages S after stream", "GET", "/api/sessions/S/messages")
    add("get S after stream", "GET", "/api/sessions/S")
    add("list after chats", "GET", "/api/sessions")
    post("T92 text list", "/api/sessions/S/chat",
         {"message": ["a", {"type": "input_text", "text": "b"}, {"type": "output_text", "text": 5}, 7, None]})
    post("create MM", "/api/sessions", {"id": "MM"})
    post("T91 multimodal", "/api/sessions/MM/chat", {"message": [
        {"type": "text", "text": "look"}, {"type": "input_image", "image_url": " HTTPS://x/y.png ", "detail": "low"},
        {"type": "text", "text": "more"}]})
    add("multimodal user row", "GET", "/api/sessions/MM/messages")
    post("stream on an empty session", "/api/sessions/MM/chat/stream", {"input": "via input"}, stream=True)

    # -- every validation error, chat then stream ---------------------------------------
    invalid: list[tuple[str, Any]] = [
        ("T81 empty body object", {}), ("T82 blank message blocks input", {"message": "   ", "input": "x"}),
        ("T83 prompt not read", {"prompt": "x"}), ("T84 bare strings", {"message": ["hello"]}),
        ("T84b dict", {"message": {"text": "hi"}}), ("T84b number", {"message": 5}),
        ("T85 file part", {"message": [{"type": "text", "text": "a"}, {"type": "file", "file_id": "x"}]}),
        ("T85b only a file part", {"message": [{"type": "input_file"}]}),
        ("T86 audio", {"message": [{"type": "text", "text": "a"}, {"type": "audio"}]}),
        ("missing type", {"message": [{"type": "text", "text": "a"}, {"text": "b"}]}),
        ("T87 ftp", {"message": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}),
        ("T88 data text", {"message": [{"type": "image_url", "image_url": {"url": "data:text/plain,abc"}}]}),
        ("T88b no comma", {"message": [{"type": "input_image", "image_url": "data:image/png;base64"}]}),
        ("T89 blank url", {"message": [{"type": "image_url", "image_url": {"url": "  "}}]}),
        ("T90 blank detail", {"message": [{"type": "image_url", "image_url": {"url": "http://x", "detail": ""}}]}),
        ("T94 system_message 5", {"message": "hi", "system_message": 5}),
        ("T94b instructions 5", {"message": "hi", "instructions": 5}),
        ("instructions 0 after empty system_message", {"message": "hi", "system_message": "", "instructions": 0}),
        ("T103 empty message", {"message": ""}),
    ]
    for route in ("chat", "chat/stream"):
        for name, body in invalid:
            post(f"{name} ({route})", f"/api/sessions/S/{route}", body)
        post(f"bad JSON ({route})", f"/api/sessions/S/{route}", b"{bad")
        post(f"not an object ({route})", f"/api/sessions/S/{route}", b"[1]")
        post(f"T96/T104 404 before body ({route})", f"/api/sessions/NOPE/{route}", b"nope")
        post(f"T6 long session key before 404 ({route})", f"/api/sessions/NOPE/{route}", {"message": "hi"},
             headers={"X-Hermes-Session-Key": "k" * 257})
        post(f"256-char session key ({route})", f"/api/sessions/MM/{route}", {"message": "hi"},
             headers={"X-Hermes-Session-Key": "k" * 256}, stream=route != "chat")
    add("S unchanged by refused turns", "GET", "/api/sessions/S")

    # -- ended session --------------------------------------------------------------------
    post("create E", "/api/sessions", {"id": "E", "title": "Ended"})
    add("close E", "PATCH", "/api/sessions/E", {"end_reason": "client_closed"})
    post("T99 chat on ended session", "/api/sessions/E/chat", {"message": "still there?"})
    add("E stays ended", "GET", "/api/sessions/E")

    # -- fork ------------------------------------------------------------------------------
    post("T66 fork onto existing", "/api/sessions/S/fork", {"id": "E"})
    post("T67 fork onto itself", "/api/sessions/S/fork", {"id": "S"})
    post("T68 blank fork id", "/api/sessions/S/fork", {"id": "   "})
    post("T68 newline fork id", "/api/sessions/S/fork", {"id": "a\nb"})
    post("T69 fork bad JSON", "/api/sessions/S/fork", b"[")
    post("T69b fork 404 before body", "/api/sessions/NOPE/fork", b"{")
    add("S still open", "GET", "/api/sessions/S")
    post("T70 fork derived title", "/api/sessions/S/fork", {})
    add("S branched", "GET", "/api/sessions/S")
    post("T72 fork duplicate title", "/api/sessions/S/fork", {"id": "FD", "title": "Chat seq"})
    add("T72 child exists after 400", "GET", "/api/sessions/FD")
    add("T72 child messages after 400", "GET", "/api/sessions/FD/messages")
    post("chat on the fork child", "/api/sessions/FD/chat", {"message": "child turn"})
    add("child messages after its turn", "GET", "/api/sessions/FD/messages")
    add("child after its turn", "GET", "/api/sessions/FD")
    post("T71 lax fork id", "/api/sessions/S/fork", {"id": "../evil", "title": ""})
    add("T62 source messages after forks", "GET", "/api/sessions/S/messages", deviation="D2")
    post("stream on the fork child", "/api/sessions/FD/chat/stream", {"message": "child stream"}, stream=True)
    post("create L98", "/api/sessions", {"id": "L98", "title": "t" * 98})
    post("L98 turn", "/api/sessions/L98/chat", {"message": "fill"})
    post("T74 derived title too long", "/api/sessions/L98/fork", {"id": "L98c"})
    add("T74 child exists", "GET", "/api/sessions/L98c")
    add("T74 child messages", "GET", "/api/sessions/L98c/messages")
    add("list after forks", "GET", "/api/sessions?limit=200&include_children=1")
    return steps


def compare(steps: list[Step], verbose: bool, quirks: bool = False) -> int:
    norm = {"oracle": Normaliser("oracle"), "ours": Normaliser("ours")}
    same = unexpected = expected = usage_turns = usage_equal = 0
    for step in steps:
        if quirks:  # every deviation switched off: nothing may differ
            step.deviation = None
        theirs, ours = request(ORACLE_PORT, step), request(OURS_PORT, step)
        a, b = norm["oracle"](theirs), norm["ours"](ours)
        if raw_usage(theirs) is not None:
            usage_turns += 1
            usage_equal += raw_usage(theirs) == raw_usage(ours)
        if a == b:
            same += 1
            if step.deviation:
                unexpected += 1
                print(f"NO-DIFF   {step.name}: expected {step.deviation}")
            elif verbose:
                print(f"same      {step.name}")
            continue
        label = f"expected  {step.deviation}" if step.deviation else "DIFF     "
        expected += bool(step.deviation)
        unexpected += not step.deviation
        print(f"{label} {step.name}")
        print_differences(a, b, 700)
    total = len(steps)
    print(f"\n{total} requests: {same} identical after normalisation, {expected} expected "
          f"differences, {unexpected} unexpected differences; usage numbers equal in {usage_equal} of "
          f"{usage_turns} turns; `_thinking` tool.progress events: {norm['oracle'].thinking} upstream, "
          f"{norm['ours'].thinking} ours" + (" (--upstream-quirks)" if quirks else ""))
    return 0 if unexpected == 0 else 1


def run(verbose: bool, keep: bool, quirks: bool) -> int:
    with Workbench("hs-oracle-chat-diff-", keep) as bench:
        bench.oracle("oracle", ORACLE_PORT)
        bench.ours("ours", OURS_PORT, extra=["--upstream-quirks"] if quirks else [])
        return compare(build_steps(), verbose, quirks)


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
