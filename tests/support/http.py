"""HTTP helpers for tests: raw requests, the ordinary create, and the envelopes to compare with.

`raw_request` sends bytes exactly as given (paths unnormalised, bodies chunked or
announced but never sent). `create_session` is the ordinary create every chat, fork and
stream test starts from.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.server import RunningServer

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


def error(code: str | None, message: str, param: Any = None) -> dict[str, Any]:
    """The standard envelope, for equality assertions."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def envelope_problem(response: httpx.Response, status: int, code: str | None) -> str | None:
    """Why `response` is not `status` with the standard envelope carrying `code`, or None."""
    if response.status_code != status:
        return f"status {response.status_code}, not {status}: {response.text[:200]}"
    if not response.headers.get("content-type", "").startswith("application/json"):
        return f"content-type {response.headers.get('content-type')!r}: {response.text[:200]}"
    error = response.json().get("error")
    if not isinstance(error, dict) or set(error) != {"message", "type", "param", "code"}:
        return f"not the standard envelope: {response.text[:200]}"
    if error["code"] != code:
        return f"code {error['code']!r}, not {code!r}"
    return None
