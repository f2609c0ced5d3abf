"""One pass through the session lifecycle against a running hermes-server (stdlib only).

    HERMES_URL=http://127.0.0.1:8642 API_SERVER_KEY=... python lifecycle_check.py

It does what a connector does first: probe health and capabilities, then create, list,
read, rename, chat (when served), read the transcript, fork, delete. Exit code 0 when
every step answered as the Hermes API does, 1 with the failing step otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

BASE = os.environ.get("HERMES_URL", "http://127.0.0.1:8642").rstrip("/")
KEY = os.environ.get("API_SERVER_KEY", "")
# Loopback or a compose network: never through a proxy.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class CheckFailed(Exception):
    pass


def call(method: str, path: str, body: Any = None, *, key: bool = True) -> tuple[int, Any]:
    """Send one request; returns the status and the decoded JSON body (None when not JSON)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method)
    if key and KEY:
        request.add_header("Authorization", f"Bearer {KEY}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with OPENER.open(request, timeout=30) as response:
            status, raw, kind = response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        status, raw, kind = error.code, error.read(), error.headers.get("Content-Type", "")
    return status, json.loads(raw) if kind.startswith("application/json") else None


def expect(step: str, got: int, want: int, body: Any = None) -> None:
    if got != want:
        raise CheckFailed(f"{step}: HTTP {got}, expected {want}: {body}")
    print(f"ok  {step}", flush=True)


def run() -> None:
    status, health = call("GET", "/health", key=False)
    expect("GET /health", status, 200, health)
    status, caps = call("GET", "/v1/capabilities")
    expect("GET /v1/capabilities", status, 200, caps)
    features = caps["features"]
    if not (features["session_resources"] and features["session_fork"]):
        raise CheckFailed(f"session routes not advertised: {features}")

    status, created = call("POST", "/api/sessions", {"title": "lifecycle check"})
    expect("POST /api/sessions", status, 201, created)
    session_id = created["session"]["id"]
    path = "/api/sessions/" + urllib.request.quote(session_id, safe="")

    status, listed = call("GET", "/api/sessions?limit=200")
    expect("GET /api/sessions", status, 200, listed)
    if session_id not in [row["id"] for row in listed["data"]]:
        raise CheckFailed(f"new session {session_id} missing from the list")
    status, fetched = call("GET", path)
    expect("GET /api/sessions/{id}", status, 200, fetched)
    status, patched = call("PATCH", path, {"title": "lifecycle check (renamed)"})
    expect("PATCH /api/sessions/{id}", status, 200, patched)
    if patched["session"]["title"] != "lifecycle check (renamed)":
        raise CheckFailed(f"title not changed: {patched}")

    expected_messages = 0
    if features["session_chat"]:
        status, reply = call("POST", path + "/chat", {"message": "hello from the lifecycle check"})
        expect("POST /api/sessions/{id}/chat", status, 200, reply)
        expected_messages = 2
    status, transcript = call("GET", path + "/messages")
    expect("GET /api/sessions/{id}/messages", status, 200, transcript)
    if len(transcript["data"]) != expected_messages:
        raise CheckFailed(f"expected {expected_messages} messages, got {transcript['data']}")

    status, forked = call("POST", path + "/fork", {})
    expect("POST /api/sessions/{id}/fork", status, 201, forked)
    fork_path = "/api/sessions/" + urllib.request.quote(forked["session"]["id"], safe="")
    for target in (fork_path, path):
        status, deleted = call("DELETE", target)
        expect("DELETE /api/sessions/{id}", status, 200, deleted)
    status, gone = call("GET", path)
    expect("GET deleted session", status, 404, gone)


def main() -> int:
    try:
        run()
    except (CheckFailed, urllib.error.URLError, OSError, KeyError, ValueError) as exc:
        print(f"FAIL {exc}", file=sys.stderr, flush=True)
        return 1
    print("lifecycle check passed", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
