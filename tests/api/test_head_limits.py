"""Request heads: exactly what hermes-agent 0.19.0 accepts is accepted, the rest refused (D11).

`BOUNDARIES` is the table measured on 0.19.0's own server (aiohttp 3.14.1): each head is
built from a size n, accepted up to `most` and refused from `most + 1` with 0.19.0's 400
text/plain answer. hermes-server accepts the same heads and refuses the others with 400 and
its envelope (the code naming the limit), or with 0.19.0's answer under `--upstream-quirks`.
The last test runs the table against 0.19.0 itself, so the table is proven, not assumed.
Raw sockets throughout: each head goes out exactly as built.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.server import RunningServer, start_server
from tests.support.upstream_api import UpstreamServer

pytestmark = pytest.mark.in_process

UPSTREAM_STATUS_LINE = b"HTTP/1.0 400 Bad Request"
HEAD_LIMIT = 2 * 1024 * 1024


def head(target: bytes = b"/health", *lines: bytes, method: bytes = b"GET", first: bytes | None = None) -> bytes:
    """A request head: Host first (unless `first` comes before it), then `lines`."""
    fields = ([first] if first is not None else []) + [b"Host: 127.0.0.1"] + list(lines)
    return b"\r\n".join([method + b" " + target + b" HTTP/1.1", *fields]) + b"\r\n\r\n"


@dataclass(frozen=True)
class Boundary:
    """Heads built from n: 0.19.0 accepts up to `most`, and past it refuses with `code` (ours) and quotes
    `quoted(n)` (the start of what passed the limit; None: its count message)."""

    what: str
    build: Callable[[int], bytes]
    most: int
    code: str
    quoted: Callable[[int], bytes] | None = None
    target: bool = False  # aiohttp quotes the target as a bytearray

    def upstream_body(self, n: int) -> bytes:
        if self.quoted is None:
            return b"Too many headers received"
        shown = self.quoted(n)[:100] + b"..."
        text = repr(bytearray(shown)) if self.target else repr(shown)
        return f"Got more than 8190 bytes when reading: {text}.".encode()


def _headers(n: int, line: Callable[[int], bytes]) -> bytes:
    return head(b"/health", *(line(i) for i in range(n - 1)))  # Host is the n-th


BOUNDARIES = [
    Boundary("target: path and query", lambda n: head(b"/health?" + b"a" * (n - 8)), 8190,
             "request_target_too_long", lambda n: b"/health?" + b"a" * (n - 8), target=True),
    Boundary("target: a path alone (a 404)", lambda n: head(b"/" + b"p" * (n - 1)), 8190,
             "request_target_too_long", lambda n: b"/" + b"p" * (n - 1), target=True),
    Boundary("target: the method and version do not count", lambda n: head(b"/health?" + b"a" * (n - 8),
                                                                           method=b"DELETE"), 8190,
             "request_target_too_long", lambda n: b"/health?" + b"a" * (n - 8), target=True),
    Boundary("value of a later header", lambda n: head(b"/health", b"X-Chain: " + b"v" * n), 8190,
             "request_header_too_large", lambda n: b"v" * n),
    Boundary("value: a long name does not count", lambda n: head(b"/health", b"X" * 50 + b": " + b"v" * n), 8190,
             "request_header_too_large", lambda n: b"v" * n),
    Boundary("value: its leading blanks do not count",
             lambda n: head(b"/health", b"X-Chain:\t" + b" " * 99 + b"v" * n), 8190,
             "request_header_too_large", lambda n: b"v" * n),
    Boundary("value: its trailing blanks count", lambda n: head(b"/health", b"X-Chain: " + b"v" * n + b" " * 100),
             8090, "request_header_too_large", lambda n: b"v" * n),
    Boundary("first header: its name and value together",
             lambda n: head(b"/health", first=b"X-First: " + b"v" * n), 8183,
             "request_header_too_large", lambda n: b"v" * n),
    Boundary("Host first: its name and value together", lambda n: b"GET /health HTTP/1.1\r\nHost: " + b"h" * n
             + b"\r\n\r\n", 8186, "request_header_too_large", lambda n: b"h" * n),
    Boundary("name, with the name before it (Host)", lambda n: head(b"/health", b"N" * n + b": v"), 8186,
             "request_header_too_large", lambda n: b"Host" + b"N" * n),
    Boundary("name, with a 12-byte name before it", lambda n: head(b"/health", b"X-Abcdefghij: 1", b"N" * n + b": v"),
             8178, "request_header_too_large", lambda n: b"X-Abcdefghij" + b"N" * n),
    Boundary("header lines, Host included", lambda n: _headers(n, lambda i: b"X-H%d: v" % i), 128,
             "too_many_headers"),
    Boundary("header lines with empty values", lambda n: _headers(n, lambda i: b"X-H%d:" % i), 128,
             "too_many_headers"),
]
IDS = [boundary.what for boundary in BOUNDARIES]
# Far from any single limit, and 0.19.0 takes them: 127 long values after a target of 8,190 bytes (1.05 MB),
# and a value whose 5 MB of leading blanks 0.19.0 skips (hermes-server: past its head limit). Each value
# leaves room for its name: a head this long reaches 0.19.0 in several reads, and one that cuts a name
# makes aiohttp count that name with its value (docs/differences.md, D11).
LARGEST = head(b"/health?" + b"a" * 8182, *(b"X-H%03d: " % i + b"v" * 8184 for i in range(127)))
PADDED = head(b"/health", b"X-Pad:" + b" " * (5 << 20) + b"v")


@dataclass
class Answer:
    status_line: bytes
    headers: dict[bytes, bytes]
    body: bytes
    closed: bool

    @property
    def status(self) -> int:
        return int(self.status_line.split(b" ")[1])


def exchange(port: int, raw: bytes) -> Answer:
    """Send `raw` on a new connection; the answer, and (for a 400) whether the server then ended the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"the connection ended without an answer: {data!r}"
            data += chunk
        top, _, rest = data.partition(b"\r\n\r\n")
        status_line, *lines = top.split(b"\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(b":") for line in lines)}
        length = int(headers[b"content-length"])
        while len(rest) < length:
            rest += sock.recv(65536)
        answer = Answer(status_line, headers, rest[:length], False)
        if answer.status == 400:
            sock.settimeout(5.0)
            answer.closed = sock.recv(1) == b""
        return answer


def padded(size: int) -> bytes:
    """A head of exactly `size` bytes: one value behind that many leading blanks."""
    return head(b"/health", b"X-Pad:" + b" " * (size - len(head(b"/health", b"X-Pad:v"))) + b"v")


def assert_accepted(answer: Answer) -> None:
    assert answer.status != 400, answer


def assert_ours(answer: Answer, code: str) -> None:
    assert (answer.status_line, answer.closed) == (b"HTTP/1.1 400 Bad Request", True)
    assert answer.headers[b"content-type"] == b"application/json; charset=utf-8"
    assert answer.headers[b"connection"] == b"close"
    error = json.loads(answer.body)["error"]
    assert (error["code"], error["type"]) == (code, "invalid_request_error"), error


def assert_upstream(answer: Answer, body: bytes) -> None:
    assert (answer.status_line, answer.closed) == (UPSTREAM_STATUS_LINE, True)
    assert answer.headers[b"content-type"] == b"text/plain; charset=utf-8"
    assert answer.body == body


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("heads") / "hermes")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def quirky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(tmp_path_factory.mktemp("heads-quirks") / "hermes", "--upstream-quirks")
    yield server
    server.stop()


@pytest.mark.parametrize("boundary", BOUNDARIES, ids=IDS)
def test_each_boundary_is_upstreams_with_our_envelope_past_it(ours: RunningServer, boundary: Boundary) -> None:
    assert_accepted(exchange(ours.port, boundary.build(boundary.most)))
    assert_ours(exchange(ours.port, boundary.build(boundary.most + 1)), boundary.code)


@pytest.mark.parametrize("boundary", BOUNDARIES, ids=IDS)
def test_under_upstream_quirks_past_each_boundary_is_upstreams_answer(quirky: RunningServer,
                                                                      boundary: Boundary) -> None:
    assert_accepted(exchange(quirky.port, boundary.build(boundary.most)))
    n = boundary.most + 1
    assert_upstream(exchange(quirky.port, boundary.build(n)), boundary.upstream_body(n))


def test_the_envelope_names_the_limit_and_the_header(ours: RunningServer) -> None:
    """The issue's case: an 11 KB delegation chain, refused as by 0.19.0, saying which header and why."""
    answer = exchange(ours.port, head(b"/v1/models", b"X-AIP-Delegation-Chain: " + b"c" * 11_000))
    assert_ours(answer, "request_header_too_large")
    assert json.loads(answer.body)["error"]["message"] == (
        "Request header 'X-AIP-Delegation-Chain' too large: its value passes 8190 bytes.")
    answer = exchange(ours.port, head(b"/health?" + b"q" * 9000))
    assert json.loads(answer.body)["error"]["message"] == "Request target (path and query) longer than 8190 bytes."


@pytest.mark.parametrize("server", ["ours", "quirky"])
def test_the_largest_heads_upstream_takes_are_served(server: str, request: pytest.FixtureRequest) -> None:
    port = request.getfixturevalue(server).port
    assert exchange(port, LARGEST).status == 200


@pytest.mark.parametrize("server", ["ours", "quirky"])
def test_the_whole_head_is_bounded_in_both_modes(server: str, request: pytest.FixtureRequest) -> None:
    """0.19.0 has no bound (it takes PADDED); ours is 2 MiB of head, blanks included, and keeps its envelope."""
    port = request.getfixturevalue(server).port
    assert exchange(port, padded(HEAD_LIMIT)).status == 200
    assert_ours(exchange(port, padded(HEAD_LIMIT + 1)), "request_head_too_large")
    assert_ours(exchange(port, PADDED), "request_head_too_large")


def test_each_request_of_a_connection_is_counted_afresh(ours: RunningServer) -> None:
    """128 header lines twice on one connection; a long first name after a head that ended with one."""
    heads = [_headers(128, lambda i: b"X-H%d: v" % i)] * 2 + [
        head(b"/health", b"A" * 8000 + b": 1"), b"GET /health HTTP/1.1\r\n" + b"B" * 8100 + b": 2\r\nHost: x\r\n\r\n"]
    with socket.create_connection(("127.0.0.1", ours.port), timeout=30) as sock:
        for raw in heads:
            sock.sendall(raw)
            data = b""
            while not data.endswith(b'"version": "0.19.0"}'):
                chunk = sock.recv(65536)
                assert chunk, data
                data += chunk
            assert data.startswith(b"HTTP/1.1 200 ")


def test_the_flags_move_each_limit(tmp_path: Path) -> None:
    small = start_server(tmp_path / "hermes", "--max-request-line", "512", "--max-header-bytes", "1024",
                         "--max-headers", "10", "--max-head-bytes", "4096")
    try:
        port = small.port
        assert_accepted(exchange(port, head(b"/" + b"p" * 511)))
        assert_ours(exchange(port, head(b"/" + b"p" * 512)), "request_target_too_long")
        assert_accepted(exchange(port, head(b"/health", b"X-A: " + b"v" * 1024)))
        assert_ours(exchange(port, head(b"/health", b"X-A: " + b"v" * 1025)), "request_header_too_large")
        assert_accepted(exchange(port, _headers(10, lambda i: b"X-H%d: v" % i)))
        assert_ours(exchange(port, _headers(11, lambda i: b"X-H%d: v" % i)), "too_many_headers")
        assert_accepted(exchange(port, padded(4096)))
        assert_ours(exchange(port, padded(4097)), "request_head_too_large")
    finally:
        small.stop()


def test_the_table_is_upstreams(tmp_path: Path) -> None:
    """The same heads against hermes-agent 0.19.0's own server: accepted up to each `most`, refused past
    it with the body the table gives; its largest and padded heads taken."""
    with UpstreamServer(tmp_path / "upstream") as upstream:
        port = upstream.port
        for boundary in BOUNDARIES:
            assert_accepted(exchange(port, boundary.build(boundary.most)))
            n = boundary.most + 1
            assert_upstream(exchange(port, boundary.build(n)), boundary.upstream_body(n))
        assert exchange(port, LARGEST).status == 200
        assert exchange(port, PADDED).status == 200
