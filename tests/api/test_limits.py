"""The body-size limit and the framework's own answers (spec §3.3, §3.7; vectors T105–T108, T110, T112–T114; D4)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.http import JSON_TYPE, TEXT_TYPE, error, raw_request
from tests.support.server import RunningServer

pytestmark = pytest.mark.in_process

LIMIT = 10_000_000
TOO_LARGE = error("body_too_large", "Request body too large.")
TOO_LARGE_BYTES = (b'{"error": {"message": "Request body too large.", "type": "invalid_request_error", '
                   b'"param": null, "code": "body_too_large"}}')


def padded(prefix: bytes, size: int) -> bytes:
    """A JSON object of exactly `size` bytes (trailing whitespace is valid JSON)."""
    return prefix + b" " * (size - len(prefix))


def assert_413(answer) -> None:
    assert (answer.status, answer.body) == (413, TOO_LARGE_BYTES)
    assert answer.headers["content-type"] == JSON_TYPE
    assert answer.has_no_security_headers()


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("POST", "/api/sessions/A/chat", False),  # T105: before auth
        ("POST", "/api/sessions", True),  # T106
        ("PATCH", "/api/sessions/A", True),  # T106
        ("PATCH", "/api/sessions/NOPE", True),  # before the 404
        ("POST", "/api/sessions/NOPE/fork", False),
        ("PUT", "/api/sessions/A", True),  # before the 405
        ("POST", "/nope", False),  # before the framework 404
    ],
)
def test_t105_t106_content_length_over_the_limit(server: RunningServer, method: str, path: str, auth: bool) -> None:
    """Answered from the header alone: the body is never sent."""
    r = raw_request(server, method, path, b"x" * (LIMIT + 16), auth=auth, announce_only=True)
    assert_413(r)


def test_limit_plus_one(server: RunningServer) -> None:
    assert_413(raw_request(server, "POST", "/api/sessions", b"x" * (LIMIT + 1), announce_only=True))


def test_t108_exactly_the_limit_is_processed(server: RunningServer) -> None:
    r = raw_request(server, "POST", "/api/sessions", padded(b'{"id": "lim-exact"}', LIMIT))
    assert r.status == 201
    assert r.json()["session"]["id"] == "lim-exact"
    r = raw_request(server, "PATCH", "/api/sessions/lim-exact", padded(b'{"title": "lim exact"}', LIMIT))
    assert (r.status, r.json()["session"]["title"]) == (200, "lim exact")


def test_get_and_delete_are_not_limited(server: RunningServer) -> None:
    """The limit applies to POST, PUT and PATCH only; other methods never read a body."""
    server.client.post("/api/sessions", json={"id": "lim-get"})
    r = raw_request(server, "GET", "/api/sessions/lim-get", b"x" * (LIMIT + 1), announce_only=True)
    assert r.status == 200
    r = raw_request(server, "DELETE", "/api/sessions/lim-get", b"x" * (LIMIT + 1), announce_only=True)
    assert r.status == 200


def chunks(total: int, size: int, sent: list[int]) -> Iterator[bytes]:
    for offset in range(0, total, size):
        piece = b" " * min(size, total - offset)
        sent.append(len(piece))
        yield piece


def test_t107_d4_chunked_over_the_limit_is_413_and_reading_stops(server: RunningServer) -> None:
    """D4: 0.19.0 answers 400 "Invalid JSON"; we answer 413 and stop reading at the limit."""
    sent: list[int] = []
    r = raw_request(server, "POST", "/api/sessions", chunks(200 * 1_000_000, 1_000_000, sent))
    assert_413(r)
    assert sum(sent) < 100 * 1_000_000  # the server hung up long before the 200 MB were through


def test_d4_chunked_patch_over_the_limit(server: RunningServer) -> None:
    server.client.post("/api/sessions", json={"id": "lim-chunk-patch"})
    r = raw_request(server, "PATCH", "/api/sessions/lim-chunk-patch", chunks(LIMIT + 1, 1_000_000, []))
    assert_413(r)


def test_chunked_bodies_up_to_the_limit_are_read(server: RunningServer) -> None:
    body = padded(b'{"id": "lim-chunked"}', LIMIT)
    r = raw_request(server, "POST", "/api/sessions", (body[i:i + 999_983] for i in range(0, len(body), 999_983)))
    assert r.status == 201
    r = raw_request(server, "POST", "/api/sessions", iter([b'{"id": ', b'"lim-', b'small"}']))
    assert (r.status, r.json()["session"]["id"]) == (201, "lim-small")


def test_empty_chunked_body_is_invalid_json(server: RunningServer) -> None:
    r = raw_request(server, "POST", "/api/sessions", iter([]))
    assert (r.status, r.json()) == (400, error(None, "Invalid JSON in request body"))


# -- framework answers ----------------------------------------------------------------


def assert_text(answer, status: int, text: bytes) -> None:
    assert (answer.status, answer.body) == (status, text)
    assert answer.headers["content-type"] == TEXT_TYPE
    assert answer.has_no_security_headers()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/api/sessions/F", "DELETE,GET,PATCH"),  # T112
        ("POST", "/api/sessions/F", "DELETE,GET,PATCH"),
        ("HEAD", "/api/sessions", "GET,POST"),  # T114
        ("DELETE", "/api/sessions", "GET,POST"),
        ("HEAD", "/api/sessions/F", "DELETE,GET,PATCH"),
        ("POST", "/api/sessions/F/messages", "GET"),
        ("GET", "/api/sessions/F/fork", "POST"),
        ("POST", "/health", "GET"),
    ],
)
def test_t112_t114_wrong_method_is_405(server: RunningServer, method: str, path: str, allow: str) -> None:
    body = b"{}" if method in ("PUT", "POST") else None
    r = raw_request(server, method, path, body)
    assert r.status == 405
    assert r.headers["allow"] == allow
    assert r.has_no_security_headers()
    if method != "HEAD":
        assert_text(r, 405, b"405: Method Not Allowed")


def test_405_comes_before_auth(server: RunningServer) -> None:
    assert raw_request(server, "PUT", "/api/sessions/F", auth=False).status == 405


@pytest.mark.parametrize(
    "path",
    ["/api/sessions/", "/API/sessions", "/api/sessions/a/b", "/api//sessions", "//api/sessions", "/api/./sessions",
     "/api/sessions/x/", "/api/sessions/x//messages", "/api/sessions/x/y/z", "/nope", "/", "/api",
     "/api/sessions/%7Bx%7D", "/api/sessions/./x"],
)
def test_t113_unknown_paths_are_framework_404s(server: RunningServer, path: str) -> None:
    assert_text(raw_request(server, "GET", path), 404, b"404: Not Found")
    assert_text(raw_request(server, "GET", path, auth=False), 404, b"404: Not Found")


def test_percent_encoded_static_segments_still_match(server: RunningServer) -> None:
    assert raw_request(server, "GET", "/api/%73essions?limit=1").status == 200


@pytest.mark.parametrize("path", ["/health", "/v1/health"])
def test_t110_health(server: RunningServer, path: str) -> None:
    r = raw_request(server, "GET", path, auth=False)
    assert (r.status, r.body) == (200, b'{"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}')
    assert r.headers["content-type"] == JSON_TYPE
