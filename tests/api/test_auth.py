"""Bearer authentication, CORS refusal and header handling on the resource routes (spec §2, §3.7; T1–T4, T7, T9, D5)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.http import JSON_TYPE, raw_request
from tests.support.server import KEY, RunningServer, start_server

pytestmark = pytest.mark.in_process

UNAUTHORIZED = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}

# Every resource route, with a body where it reads one.
ROUTES = [
    ("GET", "/api/sessions", None),
    ("POST", "/api/sessions", b'{"id": "auth-created"}'),
    ("GET", "/api/sessions/auth-x", None),
    ("PATCH", "/api/sessions/auth-x", b'{"title": "t"}'),
    ("DELETE", "/api/sessions/auth-x", None),
    ("GET", "/api/sessions/auth-x/messages", None),
    ("POST", "/api/sessions/auth-x/fork", b"{}"),
]


@pytest.fixture(scope="module")
def keyless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server started with --no-auth: upstream's "no key configured" behaviour."""
    srv = start_server(tmp_path_factory.mktemp("keyless") / "hermes", key=None)
    yield srv
    srv.stop()


def bare(server: RunningServer, method: str, path: str, authorization: str | bytes | None, body: bytes | None = None):
    headers = {} if authorization is None else {"Authorization": authorization}
    return raw_request(server, method, path, body, headers, auth=False)


def test_t1_missing_header_is_401_without_param(server: RunningServer) -> None:
    r = bare(server, "GET", "/api/sessions", None)
    assert r.status == 401
    assert r.json() == UNAUTHORIZED
    assert "param" not in r.json()["error"]
    assert r.headers["content-type"] == JSON_TYPE
    assert r.has_security_headers()
    assert r.body == b'{"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}'


@pytest.mark.parametrize("method,path,body", ROUTES)
def test_every_resource_route_needs_the_key(server: RunningServer, method: str, path: str, body: bytes | None) -> None:
    r = bare(server, method, path, None, body)
    assert (r.status, r.json()) == (401, UNAUTHORIZED)


def test_unauthenticated_create_writes_nothing(server: RunningServer) -> None:
    bare(server, "POST", "/api/sessions", None, b'{"id": "auth-ghost"}')
    assert server.client.get("/api/sessions/auth-ghost").status_code == 404


def test_auth_comes_before_404_and_body_parsing(server: RunningServer) -> None:
    assert bare(server, "GET", "/api/sessions/NOPE", None).status == 401
    assert bare(server, "PATCH", "/api/sessions/NOPE", "Bearer nope", b"{").status == 401
    assert bare(server, "POST", "/api/sessions", "Bearer nope", b"{bad").status == 401


@pytest.mark.parametrize(
    "authorization",
    [
        f"bearer {KEY}",  # T2
        f"BEARER {KEY}",
        f"Bearer\t{KEY}",
        f"Bearer{KEY}",
        f"Token {KEY}",
        f"Basic {KEY}",
        KEY,
        "Bearer ",
        "Bearer wrong-key-0123456789abcdef",
        f"Bearer {KEY}x",
        f"Bearer {KEY[:-1]}",
        f"Bearer {KEY.upper()}",
        f"Bearer {KEY} {KEY}",
        "Bearer caf\u00e9-0123456789abcdef".encode(),
    ],
)
def test_wrong_authorization_is_401(server: RunningServer, authorization: str | bytes) -> None:
    r = bare(server, "GET", "/api/sessions", authorization)
    assert (r.status, r.json()) == (401, UNAUTHORIZED)


@pytest.mark.parametrize("authorization", [b"Bearer \xff\xfe", b"Bearer " + KEY.encode() + b"\xa0", b"\xc3("])
def test_d5_non_utf8_token_is_a_plain_401(server: RunningServer, authorization: bytes) -> None:
    """D5: 0.19.0 answers a text/plain 500 here."""
    r = bare(server, "GET", "/api/sessions", authorization)
    assert (r.status, r.json()) == (401, UNAUTHORIZED)
    assert r.has_security_headers()


@pytest.mark.parametrize("authorization", [f"Bearer    {KEY}   ", f"Bearer {KEY}", f"Bearer \t{KEY}\t"])
def test_t3_surrounding_whitespace_is_trimmed(server: RunningServer, authorization: str) -> None:
    r = bare(server, "GET", "/api/sessions?limit=1", authorization)
    assert r.status == 200


def test_first_authorization_header_counts(server: RunningServer) -> None:
    conn_headers = [("Authorization", "Bearer wrong-0123456789abcdef"), ("Authorization", f"Bearer {KEY}")]
    with httpx.Client(base_url=server.url) as client:
        r = client.get("/api/sessions", headers=conn_headers)
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


@pytest.mark.parametrize("path", ["/health", "/v1/health"])
def test_health_needs_no_key(server: RunningServer, path: str) -> None:
    for authorization in (None, "Bearer nope"):
        r = bare(server, "GET", path, authorization)
        assert (r.status, r.json()) == (200, {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"})
        assert r.body == b'{"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}'
        assert r.has_security_headers()


def test_t7_session_key_header_ignored_off_the_chat_routes(server: RunningServer) -> None:
    long_key = {"X-Hermes-Session-Key": "k" * 300}
    created = server.client.post("/api/sessions", json={"id": "auth-t7"}, headers=long_key)
    assert created.status_code == 201
    assert "x-hermes-session-key" not in created.headers
    for method, path, body in [("GET", "/api/sessions/auth-t7", None), ("GET", "/api/sessions?limit=1", None),
                               ("PATCH", "/api/sessions/auth-t7", b"{}"), ("GET", "/api/sessions/auth-t7/messages", None),
                               ("GET", "/api/sessions/auth-t7-missing", None)]:
        r = raw_request(server, method, path, body, long_key)
        assert r.status == (404 if path.endswith("missing") else 200)
        assert "x-hermes-session-key" not in r.headers


@pytest.mark.parametrize("method", ["GET", "POST", "OPTIONS", "DELETE"])
def test_t9_foreign_origin_is_a_bare_403(server: RunningServer, method: str) -> None:
    body = b"{}" if method == "POST" else None
    r = raw_request(server, method, "/api/sessions", body, {"Origin": "https://evil"})
    assert (r.status, r.body) == (403, b"")
    assert r.has_no_security_headers()
    assert "access-control-allow-origin" not in r.headers


def test_origin_refusal_comes_before_auth(server: RunningServer) -> None:
    r = raw_request(server, "GET", "/api/sessions", headers={"Origin": "https://evil"}, auth=False)
    assert (r.status, r.body) == (403, b"")


def test_options_without_origin_is_403(server: RunningServer) -> None:
    r = raw_request(server, "OPTIONS", "/api/sessions/auth-x")
    assert (r.status, r.body) == (403, b"")


def test_t4_no_key_configured_everything_is_open(keyless: RunningServer) -> None:
    for authorization in (None, "Bearer whatever", "garbage", b"Bearer \xff"):
        r = bare(keyless, "GET", "/api/sessions", authorization)
        assert r.status == 200
        assert r.json()["object"] == "list"
    created = bare(keyless, "POST", "/api/sessions", None, b'{"id": "open"}')
    assert created.status == 201
    assert bare(keyless, "GET", "/api/sessions/open", None).json()["session"]["id"] == "open"


def test_no_key_session_key_header_ignored_off_chat(keyless: RunningServer) -> None:
    r = raw_request(keyless, "GET", "/api/sessions", headers={"X-Hermes-Session-Key": "abc"}, auth=False)
    assert r.status == 200


def test_t5_no_key_session_key_on_chat_is_403(keyless: RunningServer) -> None:
    r = raw_request(keyless, "POST", "/api/sessions/NOPE/chat", b'{"message": "x"}',
                    {"X-Hermes-Session-Key": "abc"}, auth=False)
    assert r.status == 403
    assert r.json() == {"error": {
        "message": "X-Hermes-Session-Key requires API key authentication. Configure API_SERVER_KEY to enable this feature.",
        "type": "invalid_request_error", "param": None, "code": None}}

