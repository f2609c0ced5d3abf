#!/usr/bin/env python3
"""A scriptable OpenAI-compatible mock model for the 0.19.0 oracle (tools/oracle_runs_diff.py).

Same default reply as ../shared/oracle/mock_llm.py ("MOCK-REPLY to: <text> [n=<k>]"),
plus directives read from the LAST user message (stdlib only, loopback only):

  [[delay=S]]          sleep S seconds before every answer of this turn (stop / 429 / approval probes)
  [[tool=NAME:ARGS]]   first call answers with ONE tool call NAME(ARGS as JSON object text);
                       once the transcript holds a tool result after that user message,
                       answer "TOOL-DONE: <first 60 chars of the tool result>"
  [[toolcontent=T]]    text content sent alongside the tool call (default: none)
  [[long]]             reply is ~700 chars: "<think>...</think>" + several lines (tests the 500 cut)
  [[reasoning]]        also send reasoning_content "REASONING-TEXT" (delta.reasoning_content when streaming)
  [[chunkdelay=S]]     when streaming, sleep S seconds before each content chunk (stop mid-stream)

Usage: python3 tools/scriptable_mock_llm.py --port P [--log FILE]
(The oracle then starts with ORACLE_SKIP_MOCK=1 on the same mock port.)
"""
import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_ID = "mock-model"
_lock = threading.Lock()
_n = 0


def _next_id():
    global _n
    with _lock:
        _n += 1
        return f"chatcmpl-probe-{_n:06d}"


def _text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content
                        if isinstance(p, dict) and p.get("type") in ("text", "input_text"))
    return "" if content is None else str(content)


def plan(messages):
    """Decide the answer: (content, tool_call or None, reasoning or None, delay)."""
    last_user_idx = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user = _text(messages[last_user_idx].get("content")) if last_user_idx >= 0 else ""
    delay = 0.0
    m = re.search(r"\[\[delay=([0-9.]+)\]\]", user)
    if m:
        delay = float(m.group(1))
    reasoning = "REASONING-TEXT" if "[[reasoning]]" in user else None
    after = messages[last_user_idx + 1:] if last_user_idx >= 0 else []
    tool_results = [x for x in after if x.get("role") == "tool"]
    m = re.search(r"\[\[tool=([a-z_]+):(\{.*?\})\]\]", user)
    if m and not tool_results:
        tc = m.group(2)
        content = ""
        mc = re.search(r"\[\[toolcontent=([^\]]*)\]\]", user)
        if mc:
            content = mc.group(1)
        return content, {"id": "call_probe_1", "name": m.group(1), "arguments": tc}, reasoning, delay
    if m and tool_results:
        return "TOOL-DONE: " + _text(tool_results[-1].get("content"))[:60], None, reasoning, delay
    if "[[long]]" in user:
        body = "\n".join(f"line {i:02d} " + "x" * 60 for i in range(10))
        return "<think>private musing</think>\n  first line of the long reply\n" + body, None, reasoning, delay
    clean = " ".join(re.sub(r"\[\[[^\]]*\]\]", "", user).split())[:200]
    n = sum(1 for x in messages if x.get("role") != "system")
    return f"MOCK-REPLY to: {clean} [n={n}]", None, reasoning, delay


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_file = None

    def log_message(self, fmt, *args):
        sys.stderr.write("[probe_mock] " + (fmt % args) + "\n")

    def _json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.split("?")[0].rstrip("/") in ("/v1/models", "/models"):
            model = {"id": MODEL_ID, "object": "model", "created": 1700000000, "owned_by": "mock", "context_length": 131072}
            return self._json(200, {"object": "list", "data": [model]})
        return self._json(200 if self.path in ("/", "/health") else 404, {"status": "ok"})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        if self.log_file:
            with _lock, open(self.log_file, "a") as f:
                f.write(json.dumps({"ts": time.time(), "body": body}) + "\n")
        messages = body.get("messages") or []
        content, tool, reasoning, delay = plan(messages)
        if delay:
            time.sleep(delay)
        cid = _next_id()
        usage = {"prompt_tokens": 10 * len(messages), "completion_tokens": max(1, len(content.split()))}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if tool else "stop"
        if not body.get("stream"):
            msg = {"role": "assistant", "content": content or None}
            if reasoning:
                msg["reasoning_content"] = reasoning
            if tool:
                function = {"name": tool["name"], "arguments": tool["arguments"]}
                msg["tool_calls"] = [{"id": tool["id"], "type": "function", "function": function}]
            return self._json(200, {"id": cid, "object": "chat.completion", "created": 1700000000, "model": MODEL_ID,
                                    "choices": [{"index": 0, "finish_reason": finish, "message": msg}], "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta, fin=None, use=None):
            obj = {"id": cid, "object": "chat.completion.chunk", "created": 1700000000, "model": MODEL_ID,
                   "choices": [] if use else [{"index": 0, "delta": delta, "finish_reason": fin}]}
            if use:
                obj["usage"] = use
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if reasoning:
            chunk({"reasoning_content": reasoning})
        users = [x for x in messages if x.get("role") == "user"]
        m = re.search(r"\[\[chunkdelay=([0-9.]+)\]\]", _text(users[-1].get("content")) if users else "")
        chunk_delay = float(m.group(1)) if m else 0.0
        if content:
            for i, w in enumerate(content.split(" ")):
                if chunk_delay:
                    time.sleep(chunk_delay)
                chunk({"content": w if i == 0 else " " + w})
        if tool:
            chunk({"tool_calls": [{"index": 0, "id": tool["id"], "type": "function",
                                   "function": {"name": tool["name"], "arguments": tool["arguments"]}}]})
        chunk({}, fin=finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk(None, use=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log")
    a = ap.parse_args()
    Handler.log_file = a.log
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.serve_forever()


if __name__ == "__main__":
    main()
