#!/usr/bin/env python3
"""Side by side with upstream 0.19.0: the same `POST /v1/chat/completions` requests, then the rows they left.

Usage (from the repository root):

    .venv/bin/python tools/oracle_completions_diff.py [--verbose] [--keep]

Starts two oracles (`../shared/oracle/start_upstream.sh`: with a key on 19010, mock model
19011; without a key on 19012/19013) and two hermes-servers with the default echo agent
(19020 with the same key, 19021 with `--no-auth`), each on a fresh home. Every request
of `build_steps()` goes to the oracle, then to hermes-server, in the same order.

Compared per request:
- status, Content-Type, whether the security headers are present, the SSE headers
  (Cache-Control, X-Accel-Buffering), the `Allow` header, X-Hermes-Session-Id and
  X-Hermes-Session-Key (the derived `api-<hash>` ids must be equal, not just alike);
- JSON bodies structurally, after normalising what legitimately differs: `created`,
  the `chatcmpl-…` id (its shape is checked), the agent's text (the mock's
  `MOCK-REPLY …` and our `ECHO-REPLY …` both become `<reply>`) and usage numbers;
- streams chunk by chunk: `data:` JSON payloads (keys in order, normalised values),
  `event:` names, `[DONE]`. A run of content chunks counts as one (how the reply is
  cut is the agent's business).

Then the rows both state.db files hold: every session (id, source, title, parent,
end state, message and api-call counts, whether model_config and system_prompt are
set) and every message (session, role, content with replies masked, finish_reason,
tool fields), in id order. Token counters and `model` (the agent's own) are left out.

Declared deviations (D6: a 400 where upstream answers a bare 500) are counted apart.
Exit status 0 only when there is no unexpected difference.
"""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
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

PORTS = rebased({("oracle", "key"): 19010, ("oracle", "nokey"): 19012, ("ours", "key"): 19020,
                 ("ours", "nokey"): 19021})
PATH = "/v1/chat/completions"
HEADERS = ("content-type", "cache-control", "x-accel-buffering", "allow", "x-hermes-session-id",
           "x-hermes-session-key", "x-hermes-completed", "x-hermes-partial")
USAGE_KEYS = {"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens", "output_tokens"}
TS_KEYS = {"created", "started_at", "ended_at", "last_active", "timestamp"}
_COMPLETION_ID = re.compile(r"chatcmpl-[0-9a-f]{29}")


@dataclass
class Step:
    """One request, sent identically to both servers of a pair."""

    name: str
    body: Any = None  # JSON-encoded unless bytes; None sends no body
    headers: dict[str, str | bytes] = field(default_factory=dict)
    method: str = "POST"
    path: str = PATH
    auth: bool = True
    pair: str = "key"
    deviation: str | None = None


def request(port: int, step: Step) -> Answer:
    body = step.body if isinstance(step.body, bytes) or step.body is None else js(step.body)
    auth = [("Authorization", f"Bearer {KEY}")] if step.auth and step.pair == "key" else []
    return exchange(port, step.method, step.path, body, [*auth, *step.headers.items()])


def value(key: str | None, item: Any) -> Any:
    """Mask what legitimately differs between the oracle's mock agent and our echo agent."""
    if isinstance(item, dict):
        return {k: value(k, v) for k, v in item.items()}
    if isinstance(item, list):
        return [value(None, v) for v in item]
    if key == "id" and isinstance(item, str) and item.startswith("chatcmpl-"):
        return "<chatcmpl>" if _COMPLETION_ID.fullmatch(item) else f"<bad id {item}>"
    return mask_agent_value(key, item, timestamps=TS_KEYS, counters=USAGE_KEYS)


def stream_shape(body: bytes) -> list[Any]:
    """Frames in order; consecutive content chunks collapse into one `content+`."""
    out: list[Any] = []
    for block in body.decode("utf-8").split("\n\n")[:-1]:
        if block.startswith(":"):
            out.append(("comment", block))
        elif block == "data: [DONE]":
            out.append(("done",))
        elif block.startswith("data: "):
            chunk = json.loads(block[len("data: "):])
            delta = chunk.get("choices", [{}])[0].get("delta", {})
            if "content" in delta and chunk["choices"][0].get("finish_reason") is None:
                delta["content"] = "<content>"
                if out and out[-1][0] == "content+":
                    continue
                out.append(("content+", list(chunk), value(None, chunk)))
            else:
                out.append(("chunk", list(chunk), value(None, chunk)))
        else:
            out.append(("other", block))
    return out


def shape(answer: Answer) -> dict[str, Any]:
    result: dict[str, Any] = {"status": answer.status, "secure": SECURITY_HEADER in answer.headers}
    result.update({h: answer.headers.get(h) for h in HEADERS})
    if answer.headers.get("content-type") == "text/event-stream":
        result["stream"] = stream_shape(answer.body)
    else:
        result["body"] = decoded_body(answer.body, value)
    return result


def build_steps() -> list[Step]:
    steps: list[Step] = []
    add = steps.append
    u = [{"role": "user", "content": "x"}]

    def msgs(*contents: Any) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": c} for c in contents]}

    # -- turns in derived sessions ---------------------------------------------------
    add(Step("system + user", {"messages": [{"role": "system", "content": "be nice"},
                                            {"role": "user", "content": "hello there"}]}))
    add(Step("same conversation, next turn", {"messages": [
        {"role": "system", "content": "be nice"}, {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "earlier reply"}, {"role": "user", "content": "second"}]}))
    add(Step("fresh conversation with client history", {"messages": [
        {"role": "user", "content": "fresh first"}, {"role": "assistant", "content": "fake"},
        {"role": "user", "content": "fresh second"}]}))
    add(Step("stream", {"stream": True, "model": "foo", "messages": [{"role": "user", "content": "hello stream"}]}))
    add(Step("stream, non-ASCII text", {"stream": True, "messages": [{"role": "user", "content": "héllo ✓"}]}))
    add(Step("multimodal", {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://e.x/a.png"}}]}]}))
    add(Step("bare string parts", msgs(["bare string"])))
    add(Step("system parts flattened", {"messages": [
        {"role": "system", "content": [{"type": "zzz"}, "sys", {"type": "text", "text": "tem"}]}, *u]}))
    add(Step("other roles ignored", {"messages": [
        {"role": "developer", "content": "d"}, {"role": "user", "content": "u1"},
        {"role": "tool", "content": "t"}, {"role": 1, "content": "n"}]}))
    add(Step("assistant message last", {"messages": [
        {"role": "user", "content": "q1"}, {"role": "assistant", "content": "assistant last"}]}))
    for name, content in (("number", 5), ("dict", {"a": 1}), ("bool", True)):
        add(Step(f"content {name}", msgs(content)))
    for name, model in (("null", None), ("number", 5), ("list", [1]), ("dict", {"a": 1})):
        add(Step(f"model {name}", {"model": model, "messages": u}))
    for name, flag in (("'false'", "false"), ("'yes'", "yes"), ("1", 1), ("[1]", [1]), ("'maybe'", "maybe")):
        add(Step(f"stream {name}", {"stream": flag, "messages": [{"role": "user", "content": f"s {name}"}]}))

    # -- X-Hermes-Session-Id ---------------------------------------------------------
    add(Step("create S", {"id": "S", "title": "Completions"}, path="/api/sessions"))
    add(Step("continue S (body history ignored)", {"messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "turn one"}]},
        headers={"X-Hermes-Session-Id": "S"}))
    add(Step("continue S streamed", {"stream": True, "messages": [{"role": "user", "content": "turn two"}]},
             headers={"X-Hermes-Session-Id": "S"}))
    add(Step("S messages", method="GET", path="/api/sessions/S/messages"))
    add(Step("S row", method="GET", path="/api/sessions/S"))
    add(Step("header creates a session", msgs("new one"), headers={"X-Hermes-Session-Id": "brand-new"}))
    add(Step("created session row", method="GET", path="/api/sessions/brand-new"))
    add(Step("header with key", msgs("keyed"), headers={"X-Hermes-Session-Id": "keyed", "X-Hermes-Session-Key": "c-1"}))
    add(Step("stream with key", {"stream": True, **msgs("keyed s")},
             headers={"X-Hermes-Session-Id": "keyed", "X-Hermes-Session-Key": "c-1"}))
    add(Step("blank header derives", msgs("blank sid"), headers={"X-Hermes-Session-Id": "   "}))
    add(Step("padded header", msgs("x"), headers={"X-Hermes-Session-Id": "  padded id "}))
    add(Step("no-break space is blank", msgs("nbsp"), headers={"X-Hermes-Session-Id": "\u00a0".encode()}))
    add(Step("tab in header", msgs("x"), headers={"X-Hermes-Session-Id": "a\tb"}))
    add(Step("UTF-8 header", msgs("x"), headers={"X-Hermes-Session-Id": "é-sid".encode()}))
    add(Step("256-char id", msgs("x"), headers={"X-Hermes-Session-Id": "b" * 256}))
    for name, sid in (("dots", "a..b"), ("slash", "a/b"), ("backslash", "a\\b"), ("drive", "c:x"),
                      ("257 chars", "b" * 257)):
        add(Step(f"bad header id: {name}", msgs("x"), headers={"X-Hermes-Session-Id": sid}))
    add(Step("session key too long", msgs("x"), headers={"X-Hermes-Session-Key": "k" * 257}))
    add(Step("key checked before id", msgs("x"),
             headers={"X-Hermes-Session-Id": "a/b", "X-Hermes-Session-Key": "k" * 257}))
    add(Step("messages checked before key", {}, headers={"X-Hermes-Session-Key": "k" * 257}))
    add(Step("stream refused before it starts", {"stream": True, "messages": []},
             headers={"X-Hermes-Session-Id": "S"}))

    # -- errors ---------------------------------------------------------------------
    add(Step("no auth", msgs("x"), auth=False))
    add(Step("wrong key", msgs("x"), auth=False, headers={"Authorization": "Bearer wrong-key-0123456789"}))
    add(Step("no body", b""))
    add(Step("bad JSON", b"{x"))
    add(Step("GET", method="GET"))
    add(Step("413 by Content-Length", b"{}", headers={"Content-Length": "10000001"}))
    for name, body in (("no messages", {}), ("empty list", {"messages": []}), ("messages string", {"messages": "hi"}),
                       ("messages object", {"messages": {"role": "user"}}), ("only system", {"messages": [
                           {"role": "system", "content": "x"}]}), ("blank user", msgs("  ")), ("null content", msgs(None))):
        add(Step(name, body))
    for name, body in (("body array", b"[1]"), ("body string", b'"x"'), ("message string", {"messages": ["hi"]}),
                       ("message null", {"messages": [None]}), ("role list", {"messages": [
                           {"role": ["user"], "content": "x"}]})):
        add(Step(name, body, deviation="D6"))
    parts = {
        "file part": [{"type": "file", "file": {}}],
        "unknown part": [{"type": "audio"}],
        "ftp image": [{"type": "image_url", "image_url": {"url": "ftp://x"}}],
        "empty url": [{"type": "image_url", "image_url": {}}],
        "non-image data": [{"type": "image_url", "image_url": "data:text/plain,abc"}],
        "blank detail": [{"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": ""}}],
    }
    for name, content in parts.items():
        add(Step(f"bad content: {name}", {"messages": [{"role": "user", "content": "ok"},
                                                        {"role": "assistant", "content": content}]}))

    # -- Idempotency-Key (non-streaming only) -----------------------------------------
    idem = {"Idempotency-Key": "idem-1"}
    add(Step("idempotent first", msgs("idem turn"), headers={**idem, "X-Hermes-Session-Id": "idem"}))
    add(Step("idempotent replay", msgs("idem turn"), headers={**idem, "X-Hermes-Session-Id": "idem"}))
    add(Step("replay to another session", msgs("idem turn"),
             headers={**idem, "X-Hermes-Session-Id": "idem-other", "X-Hermes-Session-Key": "kk"}))
    add(Step("same key, other request", msgs("idem turn 2"), headers={**idem, "X-Hermes-Session-Id": "idem"}))
    add(Step("idem messages", method="GET", path="/api/sessions/idem/messages"))
    add(Step("idem-other never written", method="GET", path="/api/sessions/idem-other"))
    for n in (1, 2):
        add(Step(f"streams ignore the key ({n})", {"stream": True, **msgs("idem s")},
                 headers={"Idempotency-Key": "idem-s"}))

    # -- a server without a key ----------------------------------------------------------
    add(Step("no key: plain turn", msgs("open"), pair="nokey"))
    add(Step("no key: session id refused", msgs("x"), headers={"X-Hermes-Session-Id": "S"}, pair="nokey"))
    add(Step("no key: session key refused", msgs("x"), headers={"X-Hermes-Session-Key": "k"}, pair="nokey"))
    add(Step("no key: messages first", {}, headers={"X-Hermes-Session-Id": "S"}, pair="nokey"))
    add(Step("no key: blank id is no id", msgs("open 2"), headers={"X-Hermes-Session-Id": " "}, pair="nokey"))
    add(Step("no key: no-break space is blank", msgs("open 3"), headers={"X-Hermes-Session-Id": "\u00a0".encode()},
             pair="nokey"))
    return steps


def rows(db: Path) -> dict[str, list[Any]]:
    """What the turns left in state.db, without the agent's own numbers."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        sessions = conn.execute(
            "SELECT id, source, title, parent_session_id, ended_at IS NULL, end_reason, message_count,"
            " tool_call_count, api_call_count, model_config IS NOT NULL, COALESCE(system_prompt, '') != ''"
            " FROM sessions ORDER BY id").fetchall()
        messages = conn.execute(
            "SELECT session_id, role, content, tool_call_id, tool_calls, tool_name, finish_reason, active"
            " FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()
    return {"sessions": [list(r) for r in sessions],
            "messages": [[value(None, v) if i == 2 else v for i, v in enumerate(r)] for r in messages]}


def compare(steps: list[Step], homes: dict[str, Path], verbose: bool) -> int:
    tally = {"same": 0, "expected": 0, "unexpected": 0}
    for step in steps:
        a = shape(request(PORTS[("oracle", step.pair)], step))
        b = shape(request(PORTS[("ours", step.pair)], step))
        differs = a != b
        # A declared deviation must differ; anything else must not.
        kind = ("expected" if differs else "same") if differs == bool(step.deviation) else "unexpected"
        tally[kind] += 1
        if kind != "same" or verbose:
            print(f"{kind:<11}{step.name}" + (f" [{step.deviation}]" if step.deviation else ""))
        if differs and (kind == "unexpected" or verbose):
            print_differences(a, b, 900)
    unexpected = tally["unexpected"]
    stored = {"oracle": rows(homes["oracle"] / "state.db"), "ours": rows(homes["ours"] / "state.db")}
    for table in ("sessions", "messages"):
        theirs, ours = stored["oracle"][table], stored["ours"][table]
        if theirs == ours:
            print(f"state.db {table}: {len(ours)} rows, identical after normalisation")
            continue
        unexpected += 1
        print(f"unexpected state.db {table}: oracle {len(theirs)} rows, ours {len(ours)} rows")
        for i in range(max(len(theirs), len(ours))):
            t, o = (theirs[i] if i < len(theirs) else None), (ours[i] if i < len(ours) else None)
            if t != o:
                print(f"  row {i}:\n    oracle: {t}\n    ours:   {o}")
    print(f"\n{len(steps)} requests: {tally['same']} identical after normalisation, {tally['expected']} expected "
          f"differences, {unexpected} unexpected differences (state.db tables included)")
    return 0 if unexpected == 0 else 1


def run(verbose: bool, keep: bool, quirks: bool = False) -> int:
    with Workbench("hs-oracle-completions-diff-", keep) as bench:
        for pair in ("key", "nokey"):
            bench.oracle(f"oracle-{pair}", PORTS[("oracle", pair)], no_key=pair == "nokey")
            bench.ours(f"ours-{pair}", PORTS[("ours", pair)], no_key=pair == "nokey",
                       extra=["--upstream-quirks"] if quirks else [])
        steps = build_steps()
        if quirks:  # every deviation switched off: each step must be identical
            for step in steps:
                step.deviation = None
        return compare(steps, {side: bench.home(f"{side}-key") for side in ("oracle", "ours")}, verbose)


def main() -> int:
    args = command_line(__doc__).parse_args()
    return run(args.verbose, args.keep, args.upstream_quirks)


if __name__ == "__main__":
    sys.exit(main())
