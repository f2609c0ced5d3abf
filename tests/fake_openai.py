"""A tiny OpenAI-compatible chat-completions server for the `openai` agent's tests.

Runs in a thread of the test process on a loopback port; hermes-server (a separate
process) talks to it over a real socket. What it answers depends on the last user
message, so one instance serves every case:

- contains `status-401`: HTTP 401 with an OpenAI error body quoting a secret-looking key;
- contains `status-500`: HTTP 500 with a plain-text body;
- contains `garbage`: a stream whose second chunk is not JSON;
- contains `think`: reasoning deltas before the reply;
- anything else: `FAKE: <text>` in three deltas, then a usage chunk.

Every request (headers and JSON body) is recorded in `requests`.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model-1"
LEAKED_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
USAGE = {
    "prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 3}, "completion_tokens_details": {"reasoning_tokens": 2},
}


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "user":
            content = msg.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _chunk(self, obj: Any) -> None:
        data = obj if isinstance(obj, str) else json.dumps(obj)
        self.wfile.write(f"data: {data}\n\n".encode())
        self.wfile.flush()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        if not self.path.endswith("/chat/completions"):
            return self._send(404, b'{"error": {"message": "no such route"}}', "application/json")
        text = _last_user_text(body.get("messages") or [])
        if "status-401" in text:
            error = {"error": {"message": f"Incorrect API key provided: {LEAKED_KEY}", "type": "invalid_request_error"}}
            return self._send(401, json.dumps(error).encode(), "application/json")
        if "status-500" in text:
            return self._send(500, b"upstream exploded", "text/plain")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": "c1", "object": "chat.completion.chunk", "model": MODEL,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        self._chunk(choice({"role": "assistant", "content": ""}))
        if "garbage" in text:
            self._chunk("{not json")
            return
        if "think" in text:
            self._chunk(choice({"reasoning_content": "Let me "}))
            self._chunk(choice({"reasoning_content": "think."}))
        for piece in ("FAKE:", " ", text):
            self._chunk(choice({"content": piece}))
        self._chunk(choice({}, "stop"))
        self._chunk({"id": "c1", "object": "chat.completion.chunk", "model": MODEL, "choices": [], "usage": USAGE})
        self._chunk("[DONE]")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[dict[str, Any]]


class FakeOpenAI:
    """`with FakeOpenAI() as fake:` serves on `fake.base_url` until the block ends."""

    def __init__(self) -> None:
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.requests = []
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
