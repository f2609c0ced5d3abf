#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: structured runs and the Responses API.

Over 400 lines on purpose: most of it is the request table, kept in one file so the whole set
reads top to bottom.

Usage (from the repository root):

    .venv/bin/python tools/oracle_runs_diff.py [--verbose] [--keep] [--upstream-quirks]

Starts the oracle (API port 18610) over the scriptable mock model
(`tools/scriptable_mock_llm.py`, port 18611: `[[delay=S]]`, `[[chunkdelay=S]]` and
`[[tool=terminal:…]]` in the user text make turns slow, streamed slowly, or run a
dangerous command that asks for approval), and two hermes-servers: the default echo
agent (18620) and the script agent (18621) playing the same slow, streamed and
approval turns (`SLOW_SCRIPT`). Every request of `build_steps()` goes to the oracle and
to one of ours, in the same order; run and response ids are taken from each side's own
answers. `wait` steps poll a run's status on both sides until it reaches one of the
given statuses, then compare it.

Compared: status, Content-Type, security headers, SSE headers, the session headers, JSON
bodies after masking timestamps, durations, generated ids (by order of appearance), token
counts, message row ids and the agent's words (`MOCK-REPLY …`, `ECHO-REPLY …`, `TOOL-DONE …`
become `<reply>`, keeping the `[n=K]` count of messages the model saw), and streams event by
event (keys in order; a run of text deltas counts as one; `reasoning.available` events are
compared like the others, and counted on each side). Declared deviations
(docs/differences.md) are reported apart (a D10 stream only when nothing but its
`response.content_part.*` events differs); exit status 0 only without unexpected differences.
With `--upstream-quirks` both hermes-servers run with that flag and every step must be
identical, the declared ones included.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from oracle_common import (
    KEY,
    REPO,
    SECURITY_HEADER,
    Answer,
    Workbench,
    command_line,
    decoded_body,
    exchange,
    js,
    print_differences,
    rebased,
)

WIDTH = int(os.environ.get("DIFF_WIDTH", "700"))
ORACLE_PORT, MOCK_PORT, FAST_PORT, SLOW_PORT = rebased({"oracle": 18610, "mock": 18611, "fast": 18620, "slow": 18621}).values()
SSE_HEADERS = ("content-type", "cache-control", "x-accel-buffering")
ID_HEADERS = ("x-hermes-session-id", "x-hermes-session-key")
# `created` is the chat completion object's clock second: the two servers answer in the same second only by chance.
TS_KEYS = {"timestamp", "created", "created_at", "updated_at", "started_at", "ended_at", "last_active", "duration"}
# D10: the events hermes-server adds to a Responses stream (0.19.0 sends none of them).
CONTENT_PART_EVENTS = ("response.content_part.added", "response.content_part.done")
COUNTERS = {"input_tokens", "output_tokens", "total_tokens", "api_call_count", "message_count"}
_TEXT = re.compile(r"^(MOCK-REPLY to:|ECHO-REPLY to:|TOOL-DONE:)")
_HISTORY = re.compile(r" \[n=\d+\]$")
_ID_PATTERNS = (
    ("run", re.compile(r"run_[0-9a-f]{32}")),
    ("resp", re.compile(r"resp_[0-9a-f]{28}")),
    ("msg", re.compile(r"msg_[0-9a-f]{24}")),
    ("fc", re.compile(r"fco?_[0-9a-f]{24}")),
    ("uuid", re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")),
)
DROP = 'echo DROP TABLE probe_issue11'
APPROVE = f'approve [[tool=terminal:{{"command": "{DROP}"}}]]'

# What the slow hermes-server plays for the oracle's slow, streamed and approval turns.
SLOW_SCRIPT = {"turns": [
    {"match": "[[delay=6]]", "steps": [{"sleep": 6}], "reply": "ECHO-REPLY to: slow [n=1]"},
    {"match": "[[delay=", "steps": [{"sleep": 2.5}], "reply": "ECHO-REPLY to: slow [n=1]"},
    {"match": "[[chunkdelay=", "steps": [  # ten words, 0.4 s apart, as the mock streams them
        step for word in "ECHO-REPLY to: stream slowly please, with many more words [n=1]".split(" ")
        for step in ({"sleep": 0.4}, {"delta": word if word == "ECHO-REPLY" else " " + word})]},
    {"match": "[[tool=terminal", "steps": [
        {"tool": "terminal", "args": {"command": DROP}, "preview": DROP, "approval": {"pattern_key": "SQL DROP"},
         "result": json.dumps({"output": "DROP TABLE probe_issue11", "exit_code": 0, "error": None})},
        {"sleep": 0.3}],  # the oracle's model call after the tool
     "reply": "TOOL-DONE: done"},
    {"reply": "ECHO-REPLY to: scripted [n=1]"},
]}


@dataclass
class Step:
    """One request, sent identically to the oracle and to one of ours."""

    name: str
    method: str
    path: str
    body: Any = None  # JSON-encoded unless bytes
    headers: dict[str, str] = field(default_factory=dict)
    slow: bool = False  # ours: the script-agent server
    capture: str | None = None  # remember this answer's run_id / id (and session header) under this name
    wait: tuple[str, ...] | None = None  # poll GET path until its status is one of these
    pause: float = 0.0  # seconds to sleep after the step, on both sides
    deviation: str | None = None
    key: bool = True
    # Steps sharing a `retry` name run as one group, again from its first step (up to RETRIES
    # times) when a `live` step of it found the run already settled on either side (see `compare`).
    retry: str | None = None
    live: bool = False


class Side:
    """One server under comparison: its port(s), its captured ids, its normaliser state."""

    def __init__(self, name: str, fast: int, slow: int) -> None:
        self.name, self.fast, self.slow = name, fast, slow
        self.captured: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        self.reasoning = 0

    def path(self, template: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: self.captured.get(m.group(1), m.group(0)), template)

    def send(self, step: Step) -> Answer:
        port = self.slow if step.slow else self.fast
        body = step.body if isinstance(step.body, bytes) or step.body is None else js(step.body)
        if isinstance(body, bytes):
            body = self.path(body.decode()).encode()
        headers = [("Authorization", f"Bearer {KEY}")] if step.key else []
        path = self.path(step.path)
        if step.wait:
            deadline = time.monotonic() + 30
            while True:
                answer = exchange(port, step.method, path, None, headers)
                status = json.loads(answer.body).get("status") if answer.status == 200 else None
                if status in step.wait or time.monotonic() > deadline:
                    return answer
                time.sleep(0.05)
        answer = exchange(port, step.method, path, body, [*headers, *step.headers.items()])
        if step.capture and answer.headers.get("content-type", "").startswith("application/json"):
            data = json.loads(answer.body)
            if isinstance(data, dict) and (data.get("run_id") or data.get("id")):
                self.captured[step.capture] = data.get("run_id") or data.get("id")
        if step.capture and answer.headers.get("x-hermes-session-id"):
            self.captured[f"{step.capture}_session"] = answer.headers["x-hermes-session-id"]
        return answer

    # -- normalisation ------------------------------------------------------------------

    def value(self, key: str | None, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.value(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(None, v) for v in value]
        if key in TS_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
            return "<ts>"
        if key in COUNTERS and isinstance(value, int):
            return "<n>"
        if isinstance(value, str) and _TEXT.match(value):
            seen = _HISTORY.search(value)  # how many messages the model saw is compared, not the words
            return f"<reply{seen.group(0) if seen else ''}>"
        if key == "id" and isinstance(value, int) and not isinstance(value, bool):
            return "<row>"  # message row ids: the two hermes-servers keep two databases
        if key == "model" and value == "mock-model":
            return "hermes-agent"
        if isinstance(value, str):
            for kind, pattern in _ID_PATTERNS:
                value = pattern.sub(lambda m, kind=kind: self.ids.setdefault(m.group(0), f"<{kind}-{len(self.ids) + 1}>"),
                                    value)
        return value

    def events(self, body: bytes) -> list[Any]:
        """A run stream (`data:` frames) or a Responses stream (`event:` + `data:`), normalised."""
        out: list[Any] = []
        for block in body.decode("ascii").split("\n\n")[:-1]:
            if block.startswith(":"):
                out.append(("comment", block))
                continue
            lines = block.split("\n")
            data = json.loads(lines[-1][len("data: "):])
            name = lines[0][len("event: "):] if len(lines) == 2 else data.get("event")
            if name == "reasoning.available":
                self.reasoning += 1
            if "sequence_number" in data:
                data["sequence_number"] = "<seq>"
            if name in ("message.delta", "response.output_text.delta"):
                data["delta"] = "<delta>"
                if out and out[-1][0] == f"{name}+":
                    continue
                name = f"{name}+"
            out.append((name, list(data), self.value(None, data)))
        return out

    def shape(self, answer: Answer) -> dict[str, Any]:
        ctype = answer.headers.get("content-type", "")
        shape: dict[str, Any] = {"status": answer.status, "content-type": ctype,
                                 "secure": SECURITY_HEADER in answer.headers,
                                 "retry-after": answer.headers.get("retry-after"),
                                 **{h: self.value(None, answer.headers.get(h)) for h in ID_HEADERS}}
        if ctype == "text/event-stream":
            shape.update({h: answer.headers.get(h) for h in SSE_HEADERS})
            shape["events"] = self.events(answer.body)
        else:
            shape["body"] = decoded_body(answer.body, self.value)
        return shape


def build_steps() -> list[Step]:
    steps: list[Step] = []

    def add(*args: Any, **kwargs: Any) -> None:
        steps.append(Step(*args, **kwargs))

    def post(name: str, path: str, body: Any, **kwargs: Any) -> None:
        add(name, "POST", path, body, **kwargs)

    status = ("completed", "failed", "cancelled")
    # -- runs: the plain path ------------------------------------------------------------
    post("run submit", "/v1/runs", {"input": "hello run", "model": "my-model"}, capture="r1")
    add("run completed status", "GET", "/v1/runs/{r1}", wait=status)
    add("run events, late first subscriber", "GET", "/v1/runs/{r1}/events")
    add("run events again: queue gone", "GET", "/v1/runs/{r1}/events")
    add("run status after its queue went", "GET", "/v1/runs/{r1}")
    add("run session row", "GET", "/api/sessions/{r1}")
    add("run messages", "GET", "/api/sessions/{r1}/messages")
    post("stop a finished run", "/v1/runs/{r1}/stop", None)
    post("approval on a finished run", "/v1/runs/{r1}/approval", {"choice": "once"})
    post("run with session and history", "/v1/runs", {
        "input": "with history", "session_id": "runs-explicit",
        "conversation_history": [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}]},
        capture="r2", headers={"X-Hermes-Session-Key": "scope-1"})
    add("run with history done", "GET", "/v1/runs/{r2}", wait=status)
    post("second run on the same session", "/v1/runs", {"input": "again", "session_id": "runs-explicit"},
         capture="r3")
    add("second run done", "GET", "/v1/runs/{r3}", wait=status)
    add("explicit session messages", "GET", "/api/sessions/runs-explicit/messages")
    post("multi-message input", "/v1/runs", {"input": [
        {"role": "user", "content": "first"}, {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": "last"}]}, capture="r4")
    add("multi-message input done", "GET", "/v1/runs/{r4}", wait=status)
    post("list-of-parts input", "/v1/runs", {"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "one"}, {"type": "text", "text": "two"}]}]}, capture="r6")
    add("list-of-parts input done", "GET", "/v1/runs/{r6}", wait=status)
    add("list-of-parts stored row", "GET", "/api/sessions/{r6}/messages")
    post("unknown previous_response_id is ignored", "/v1/runs", {"input": "x", "previous_response_id": "resp_nope"},
         capture="r5")
    add("run with unknown previous done", "GET", "/v1/runs/{r5}", wait=status)
    # -- runs: bad input and unknown ids -------------------------------------------------
    for name, body in (("no input", {}), ("empty input list", {"input": []}), ("input object", {"input": {"a": 1}}),
                       ("empty last content", {"input": [{"role": "user", "content": ""}]}),
                       ("history not a list", {"input": "x", "conversation_history": "no"}),
                       ("history entry without content", {"input": "x", "conversation_history": [{"role": "u"}]})):
        post(f"run {name}", "/v1/runs", body)
    post("run invalid JSON", "/v1/runs", b"{")
    post("run body not an object", "/v1/runs", b"[1]", deviation="D6")
    post("run input ending in a string", "/v1/runs", {"input": ["bare"]}, deviation="D6")
    post("run without key", "/v1/runs", {"input": "x"}, key=False)
    post("run session key too long", "/v1/runs", {"input": "x"}, headers={"X-Hermes-Session-Key": "k" * 257})
    add("unknown run status", "GET", "/v1/runs/run_nope")
    add("unknown run events (after ~1 s)", "GET", "/v1/runs/run_nope/events")
    post("stop unknown run", "/v1/runs/run_nope/stop", None)
    post("approve unknown run", "/v1/runs/run_nope/approval", {"choice": "once"})
    add("runs list is not served", "GET", "/v1/runs")
    # -- runs: stop --------------------------------------------------------------------------
    stop = {"slow": True, "retry": "stop"}
    post("slow run", "/v1/runs", {"input": "slow one [[delay=2.5]]"}, capture="s1", pause=0.4, **stop)
    add("slow run is running", "GET", "/v1/runs/{s1}", **stop)
    post("stop the slow run", "/v1/runs/{s1}/stop", None, **stop)
    add("stopping status", "GET", "/v1/runs/{s1}", live=True, **stop)
    post("stop it twice", "/v1/runs/{s1}/stop", b"{}", live=True, **stop)
    add("stopped run events", "GET", "/v1/runs/{s1}/events", slow=True)
    add("cancelled status", "GET", "/v1/runs/{s1}", slow=True, wait=status)
    add("stopped run messages", "GET", "/api/sessions/{s1}/messages", slow=True)
    post("slowly streamed run", "/v1/runs", {"input": "stream slowly please, with many more words [[chunkdelay=0.4]]"},
         slow=True, capture="s2", pause=1.6)
    post("stop mid-stream", "/v1/runs/{s2}/stop", None, slow=True)
    add("mid-stream stop events", "GET", "/v1/runs/{s2}/events", slow=True)
    add("mid-stream stop session", "GET", "/api/sessions/{s2}", slow=True, wait=None)
    # -- runs: approval ---------------------------------------------------------------------
    post("run that asks for approval", "/v1/runs", {"input": APPROVE}, slow=True, capture="a1")
    add("waiting for approval", "GET", "/v1/runs/{a1}", slow=True, wait=("waiting_for_approval",))
    post("approval bad JSON", "/v1/runs/{a1}/approval", b"{", slow=True)
    post("approval bad choice", "/v1/runs/{a1}/approval", {"choice": "maybe"}, slow=True)
    post("approval without choice", "/v1/runs/{a1}/approval", {}, slow=True)
    post("approval body not an object", "/v1/runs/{a1}/approval", b'["deny"]', slow=True, deviation="D6")
    post("approval deny (case and spaces)", "/v1/runs/{a1}/approval", {"choice": " DENY "}, slow=True)
    post("approval again: none pending", "/v1/runs/{a1}/approval", {"choice": "deny"}, slow=True)
    add("denied run completes", "GET", "/v1/runs/{a1}", slow=True, wait=status)
    add("denied run events", "GET", "/v1/runs/{a1}/events", slow=True)
    post("second approval run", "/v1/runs", {"input": APPROVE}, slow=True, capture="a2")
    add("second waiting", "GET", "/v1/runs/{a2}", slow=True, wait=("waiting_for_approval",))
    post("approve all", "/v1/runs/{a2}/approval", {"choice": "approve", "all": "yes"}, slow=True)
    add("approved run completes", "GET", "/v1/runs/{a2}", slow=True, wait=status)
    add("approved run events", "GET", "/v1/runs/{a2}/events", slow=True)
    post("third approval run", "/v1/runs", {"input": APPROVE}, slow=True, capture="a3")
    add("third waiting", "GET", "/v1/runs/{a3}", slow=True, wait=("waiting_for_approval",))
    post("stop while waiting", "/v1/runs/{a3}/stop", None, slow=True)
    add("stop while waiting events", "GET", "/v1/runs/{a3}/events", slow=True)
    add("stop while waiting status", "GET", "/v1/runs/{a3}", slow=True, wait=status)
    # -- the cap -------------------------------------------------------------------------------
    for i in range(10):
        post(f"cap run {i + 1}", "/v1/runs", {"input": f"cap {i} [[delay=6]]"}, slow=True)
    post("11th run: 429", "/v1/runs", {"input": "one too many"}, slow=True)
    post("bad JSON while full: 429 first", "/v1/runs", b"{", slow=True)
    post("responses while full", "/v1/responses", {"input": "x"}, slow=True)
    post("chat completions while full", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]},
         slow=True, pause=12.0)
    # -- responses -------------------------------------------------------------------------------
    post("response plain", "/v1/responses", {"input": "first question", "model": "custom-model"}, capture="p1",
         headers={"X-Hermes-Session-Key": "key-a"})
    add("response get", "GET", "/v1/responses/{p1}")
    post("response chained", "/v1/responses", {"input": "second question", "previous_response_id": "{p1}",
                                               "instructions": "be brief"}, capture="p2")
    post("response chained again", "/v1/responses", {"input": "third", "previous_response_id": "{p2}"},
         capture="p3", deviation="D9")
    add("chain session messages", "GET", "/api/sessions/{p1_session}/messages", deviation="D9")
    post("response history wins over previous", "/v1/responses", {
        "input": "q", "previous_response_id": "{p1}",
        "conversation_history": [{"role": "user", "content": "h1"}, {"role": "assistant", "content": "h2"}]})
    post("conversation one", "/v1/responses", {"input": "conv one", "conversation": "diff-conv"}, capture="c1")
    post("conversation two", "/v1/responses", {"input": "conv two", "conversation": "diff-conv"}, capture="c2")
    post("conversation three", "/v1/responses", {"input": "conv three", "conversation": "diff-conv"},
         deviation="D9")
    post("store false", "/v1/responses", {"input": "not stored", "store": "false"}, capture="n1")
    add("get a store:false response", "GET", "/v1/responses/{n1}")
    post("multi input", "/v1/responses", {"input": ["a", {"role": "assistant", "content": "b"}, "c"]})
    post("response stream", "/v1/responses", {"input": "stream me", "stream": True}, deviation="D10")
    post("response stream chained", "/v1/responses", {"input": "stream two", "stream": True,
                                                      "previous_response_id": "{p1}"}, deviation="D10")
    post("response stream store false", "/v1/responses", {"input": "no store", "stream": True, "store": False},
         deviation="D10")
    post("idempotent 1", "/v1/responses", {"input": "idem"}, headers={"Idempotency-Key": "diff-k1"})
    post("idempotent 2", "/v1/responses", {"input": "idem"}, headers={"Idempotency-Key": "diff-k1"})
    for name, body in (("no input", {}), ("input null", {"input": None}), ("input int", {"input": 5}),
                       ("empty string", {"input": ""}), ("empty list", {"input": []}),
                       ("file part", {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
                       ("bad image", {"input": [{"role": "user", "content": [
                           {"type": "input_image", "image_url": "ftp://x"}]}]}),
                       ("conversation and previous", {"input": "x", "conversation": "c", "previous_response_id": "r"}),
                       ("unknown previous", {"input": "x", "previous_response_id": "resp_nope"}),
                       ("history not a list", {"input": "x", "conversation_history": "no"}),
                       ("history bad entry", {"input": "x", "conversation_history": [{"role": "user"}]}),
                       ("last message blank", {"input": [{"role": "user", "content": "x"},
                                                         {"role": "assistant", "content": "  "}]})):
        post(f"response {name}", "/v1/responses", body)
    post("response invalid JSON", "/v1/responses", b"{")
    post("response body not an object", "/v1/responses", b'["x"]', deviation="D6")
    post("response conversation object", "/v1/responses", {"input": "x", "conversation": {"a": 1}}, deviation="D6")
    post("response without key", "/v1/responses", {"input": "x"}, key=False)
    post("response session key too long", "/v1/responses", {"input": "x"},
         headers={"X-Hermes-Session-Key": "k" * 257})
    add("get unknown response", "GET", "/v1/responses/resp_nope")
    add("delete response", "DELETE", "/v1/responses/{p2}")
    add("delete it again", "DELETE", "/v1/responses/{p2}")
    add("get after delete", "GET", "/v1/responses/{p2}")
    post("chain from a deleted response", "/v1/responses", {"input": "x", "previous_response_id": "{p2}"})
    add("delete without key", "DELETE", "/v1/responses/{p1}", key=False)
    add("list responses: 405", "GET", "/v1/responses")
    add("put a response: 405", "PUT", "/v1/responses/{p1}")
    add("profile mirror get", "GET", "/p/x/v1/responses/{p1}")
    return steps


def _without_content_parts(shape: dict[str, Any]) -> dict[str, Any]:
    """A stream's shape without D10's events (their sequence numbers are masked, so nothing shifts)."""
    return {**shape, "events": [event for event in shape.get("events", []) if event[0] not in CONTENT_PART_EVENTS]}


# How often a `retry` group is run again when its stop raced the run's own end.
RETRIES = 3


def _settled(answer: Answer) -> bool:
    """A `live` step's answer showing the run had ended already: a status past `stopping`, or
    (0.19.0's stop of a finished run) a 404."""
    if answer.status == 404:
        return True
    try:
        status = json.loads(answer.body).get("status")
    except (ValueError, AttributeError):
        return False
    return status not in (None, "queued", "running", "stopping", "waiting_for_approval")


def _groups(steps: list[Step]) -> list[list[Step]]:
    """Consecutive steps with the same `retry` name together; every other step alone."""
    groups: list[list[Step]] = []
    for step in steps:
        if step.retry and groups and groups[-1][0].retry == step.retry:
            groups[-1].append(step)
        else:
            groups.append([step])
    return groups


def _run_group(group: list[Step], oracle: Side, ours: Side) -> tuple[list[tuple[Step, dict, dict]], bool]:
    """Each step of the group on both sides, shaped; and whether a `live` step found a run settled.

    Upstream notices a stop when its agent next polls the model call (every 0.3 s), so a status
    read right after the stop is `stopping` or, when the stop fell just before a poll, already
    `cancelled` (the same holds for ours' 0.2 s on a loaded machine). That is timing, not the
    wire: such a group is run again with a new run rather than compared."""
    shaped, raced = [], False
    for step in group:
        theirs, mine = oracle.send(step), ours.send(step)
        if step.pause:
            time.sleep(step.pause)
        raced = raced or (step.live and (_settled(theirs) or _settled(mine)))
        shaped.append((step, oracle.shape(theirs), ours.shape(mine)))
    return shaped, raced


def compare(steps: list[Step], verbose: bool, quirks: bool = False) -> int:
    """Each step on both sides; with `quirks` (every deviation switched off) nothing may differ."""
    oracle, ours = Side("oracle", ORACLE_PORT, ORACLE_PORT), Side("ours", FAST_PORT, SLOW_PORT)
    same = unexpected = expected = 0
    for group in _groups(steps):
        for attempt in range(1, RETRIES + 1 if group[0].retry else 2):
            shaped, raced = _run_group(group, oracle, ours)
            if not raced or attempt == RETRIES:
                break
            print(f"retried   {group[0].retry} group: a run had settled before its live step (attempt {attempt})")
        for step, a, b in shaped:
            deviation = None if quirks else step.deviation
            if deviation == "D10" and a != b and a == _without_content_parts(b):
                expected += 1
                print(f"expected  D10 {step.name}: only the content_part events differ")
                continue
            if deviation == "D10" and a != b:
                deviation = None  # anything beyond D10's events is unexpected
            if a == b:
                same += 1
                if deviation:
                    unexpected += 1
                    print(f"NO-DIFF   {step.name}: expected {deviation}")
                elif verbose:
                    print(f"same      {step.name}")
                continue
            label = f"expected  {deviation}" if deviation else "DIFF     "
            expected += bool(deviation)
            unexpected += not deviation
            print(f"{label} {step.name}")
            print_differences(a, b, WIDTH)
    mode = " (--upstream-quirks)" if quirks else ""
    print(f"\n{len(steps)} requests{mode}: {same} identical after normalisation, {expected} expected differences, "
          f"{unexpected} unexpected differences; reasoning.available events: {oracle.reasoning} upstream, "
          f"{ours.reasoning} ours")
    return 0 if unexpected == 0 else 1


def run(verbose: bool, keep: bool, quirks: bool = False) -> int:
    with Workbench("hs-oracle-runs-diff-", keep) as bench:
        bench.process("mock", [sys.executable, str(REPO / "tools" / "scriptable_mock_llm.py"), "--port", str(MOCK_PORT)])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                exchange(MOCK_PORT, "GET", "/v1/models")
                break
            except OSError:
                time.sleep(0.1)
        os.environ["ORACLE_SKIP_MOCK"] = "1"
        bench.oracle("oracle", ORACLE_PORT)
        flag = ["--upstream-quirks"] if quirks else []
        bench.ours("fast", FAST_PORT, extra=flag)
        script = bench.dir / "slow-script.json"
        script.write_text(json.dumps(SLOW_SCRIPT))
        bench.ours("slow", SLOW_PORT, extra=["--agent", "script", "--agent-script", str(script), *flag])
        return compare(build_steps(), verbose, quirks)


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
