"""Helpers for the API tests: raw HTTP requests, a session to work on, and direct row access.

`raw_request` sends bytes exactly as given (paths unnormalised, bodies chunked or
announced but never sent). `create_session` is the ordinary create every chat, fork and
stream test starts from. The row writers use plain SQL on the server's state.db, as
another Hermes process would: the server caches nothing, so the next request sees them;
the readers show columns the API never does.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

from tests.server import RunningServer

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
    "strict-transport-security": "max-age=31536000; includeSubDomains",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "x-xss-protection": "0",
    "referrer-policy": "no-referrer",
}
JSON_TYPE = "application/json; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"


@dataclass
class RawAnswer:
    status: int
    headers: dict[str, str]  # lower-cased names, first value
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def has_security_headers(self) -> bool:
        return all(self.headers.get(name) == value for name, value in SECURITY_HEADERS.items())

    def has_no_security_headers(self) -> bool:
        return not any(name in self.headers for name in SECURITY_HEADERS)


def raw_request(
    server: RunningServer,
    method: str,
    path: str,
    body: bytes | Iterable[bytes] | None = None,
    headers: dict[str, str | bytes] | None = None,
    *,
    auth: bool = True,
    announce_only: bool = False,
) -> RawAnswer:
    """One request on a new connection.

    `body` bytes go with a Content-Length (and, with `announce_only`, are never sent:
    the server must answer from the headers alone); an iterable of chunks goes with
    `Transfer-Encoding: chunked`.
    """
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        if auth and server.key:
            conn.putheader("Authorization", f"Bearer {server.key}")
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        if body is None:
            conn.endheaders()
        elif isinstance(body, bytes):
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            if not announce_only:
                _send_quietly(conn, [body])
        else:
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            _send_quietly(conn, (b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in body), end=b"0\r\n\r\n")
        resp = conn.getresponse()
        headers_out: dict[str, str] = {}
        for name, value in resp.getheaders():
            headers_out.setdefault(name.lower(), value)
        return RawAnswer(resp.status, headers_out, resp.read())
    finally:
        conn.close()


def create_session(server: RunningServer, session_id: str, **body: Any) -> dict[str, Any]:
    """POST /api/sessions with this id (and `body`), which must answer 201; the created session."""
    r = server.client.post("/api/sessions", json={"id": session_id, **body})
    assert r.status_code == 201, r.text
    return r.json()["session"]


def _send_quietly(conn: http.client.HTTPConnection, parts: Iterable[bytes], end: bytes = b"") -> None:
    """Send the body; a server that already answered may close the socket under us."""
    try:
        for part in parts:
            conn.send(part)
        if end:
            conn.send(end)
    except (BrokenPipeError, ConnectionResetError):
        pass


@pytest.fixture(autouse=True)
def database_opened(request: pytest.FixtureRequest) -> None:
    """The server opens state.db lazily: make it do so before a test writes rows into it.

    Import this into a test module to make it autouse there.
    """
    for name in ("server", "fresh_server"):
        if name in request.fixturenames:
            request.getfixturevalue(name).client.get("/api/sessions?limit=0")


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, timeout=10, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def insert_session(
    db_path: Path,
    session_id: str,
    *,
    source: str = "api_server",
    started_at: float | None = None,
    parent: str | None = None,
    end_reason: str | None = None,
    ended_at: float | None = None,
    model_config: dict[str, Any] | str | None = None,
    archived: int = 0,
    title: str | None = None,
    model: str | None = "mock-model",
    system_prompt: str | None = None,
    **columns: Any,
) -> None:
    """A sessions row as another Hermes process would write it."""
    if isinstance(model_config, dict):
        model_config = json.dumps(model_config)
    values = {
        "id": session_id, "source": source, "started_at": time.time() if started_at is None else started_at,
        "parent_session_id": parent, "end_reason": end_reason,
        "ended_at": ended_at if ended_at is not None or end_reason is None else time.time(),
        "model_config": model_config, "archived": archived, "title": title, "model": model,
        "system_prompt": system_prompt, **columns,
    }
    names = ", ".join(values)
    conn = connect(db_path)
    try:
        conn.execute(f"INSERT INTO sessions ({names}) VALUES ({', '.join('?' * len(values))})", list(values.values()))
    finally:
        conn.close()


def insert_message(
    db_path: Path,
    session_id: str,
    role: str,
    content: Any,
    timestamp: float,
    *,
    active: int = 1,
    count: bool = True,
    **columns: Any,
) -> int:
    """A messages row (lists/dicts stored behind upstream's NUL+`json:` sentinel); bumps message_count."""
    if isinstance(content, (list, dict)):
        content = "\x00json:" + json.dumps(content)
    if isinstance(columns.get("tool_calls"), list):
        columns["tool_calls"] = json.dumps(columns["tool_calls"])
    values = {"session_id": session_id, "role": role, "content": content, "timestamp": timestamp,
              "active": active, **columns}
    conn = connect(db_path)
    try:
        cur = conn.execute(
            f"INSERT INTO messages ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
            list(values.values()),
        )
        if count:
            conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (session_id,))
        return int(cur.lastrowid)
    finally:
        conn.close()


def session_row(db_path: Path, session_id: str) -> dict[str, Any]:
    """The whole sessions row, every column (including those the API never shows)."""
    conn = connect(db_path)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone())
    finally:
        conn.close()


def sql(db_path: Path, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = connect(db_path)
    try:
        return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


def unique(prefix: str) -> Callable[[str], str]:
    """Id maker for tests sharing a module server: unique(tag)('x') -> 'tag-x'."""
    return lambda name: f"{prefix}-{name}"
