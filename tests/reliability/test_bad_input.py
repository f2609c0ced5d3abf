"""Hand-written bad input on every route: never a 5xx, never a traceback in the log.

The routes come from the app's own route table (`build_routes`, plus the
/_fixture/ routes of `--fixture-api`), so a route added later is covered without
editing this file. Each route gets every applicable family of bad input, sent as
raw bytes on a fresh socket: odd path ids (encoded NUL, CR/LF, invalid UTF-8 and
percent escapes, 5,000 characters), broken or hostile JSON bodies (truncated,
non-object, 100,000-deep nesting, lone surrogates, NaN, huge numbers, wrong field
types, NUL in strings, invalid UTF-8, unknown charsets), bad headers (missing,
wrong or non-UTF-8 bearer keys, impossible Content-Length, oversized session
keys) and bad query strings. Schemathesis-generated input runs in
tests/api/test_openapi.py.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from hermes_server.app import build_routes
from hermes_server.domain.profiles import DEFAULT_VERSION, PROFILES
from hermes_server.hermrun.fixture import control_routes as herm_run_control_routes
from hermes_server.hermrun.routes import build_routes as herm_run_routes
from hermes_server.testing.control import Control
from hermes_server.testing.inspector import build_inspector_routes
from hermes_server.testing.routes import build_fixture_routes
from hermes_server.units import unserved_0_21
from tests.hermrun.support import store_at
from tests.support.db import integrity, lineage_problems
from tests.support.server import KEY, RunningServer, log_trouble, start_server

pytestmark = pytest.mark.slow

EXISTING = "bad-input-target"

PATH_IDS = [
    "missing-id", "%00", "a%0Ab", "a%0D%0Ab", "%FF%FE", "%zz", "%", "a%2Fb", "..", "%2E%2E", "%E2%80%8B",
    "%F0%9F%98%80", "x" * 5000, "%C0%AF", "%ED%A0%80", "sk-ant-api03-" + "a" * 40,
]

BODIES: list[bytes] = [
    b"", b"null", b"[]", b'"text"', b"123", b"{", b'{"id": }', b"\xff\xfe{}", b"\xef\xbb\xbf{}",
    b"[" * 100_000 + b"]" * 100_000, b'{"a": ' * 50_000 + b"1" + b"}" * 50_000,
    b'{"id": NaN, "title": Infinity}', b'{"id": 1e999}', b'{"id": 123456789012345678901234567890}',
    b'{"id": {"nested": true}}', b'{"id": ["list"]}', b'{"id": "\\ud800"}', b'{"id": "a\\u0000b"}',
    b'{"id": ""}', b'{"id": "   "}', b'{"title": "\\ud800\\udc00\\ud800"}', b'{"title": ["t"]}',
    b'{"title": {"t": 1}}', b'{"title": "' + b"t" * 5000 + b'"}', b'{"title": "a\\u0000\\u001b[31m"}',
    b'{"end_reason": 5}', b'{"end_reason": "\\ud800"}', b'{"end_reason": ""}', b'{"unknown": 1}',
    b'{"model": {"x": 1}, "system_prompt": 5}', b'{"system_prompt": "\\udfff"}',
    b'{"message": null}', b'{"message": 5}', b'{"message": {"x": 1}}', b'{"message": ["bare"]}',
    b'{"message": [{"type": "image_url", "image_url": {"url": 5}}]}',
    b'{"message": [{"type": "image_url", "image_url": "data:text/plain,x"}]}',
    b'{"message": [{"type": "file", "file": {}}]}', b'{"message": [{"type": null}]}',
    b'{"message": "hi", "system_message": 5}', b'{"message": "hi", "instructions": ["x"]}',
    b'{"message": "\\ud800"}', b'{"input": [{"type": "text", "text": {"x": 1}}]}',
    b'{"messages": "x"}', b'{"messages": []}', b'{"messages": [{"role": 5}]}',
    b'{"messages": [{"role": "user", "content": [{"type": "audio"}]}]}', b'{"messages": [null]}',
    b'{"messages": [{"role": "user", "content": "hi"}], "stream": "yes", "model": 5}',
    b'{"to": 5}', b'{"to": "nowhere"}', b'{"sessions": "x"}', b'{"sessions": [{"id": 5}]}',
    b'{"faults": [{"kind": "nope"}]}', b'{"faults": [{"kind": "status", "status": 99999}]}',
    b'{"set": "x"}', b'{"advance": "1e999"}', b'{"advance": 1e999}',
    json.dumps({f"k{i}": i for i in range(1000)}).encode(),
    # runs, responses and run approvals
    b'{"input": ["bare"]}', b'{"input": [5]}', b'{"input": [{"content": {"x": 1}}]}', b'{"input": 5}',
    b'{"input": "x", "session_id": 5}', b'{"input": "x", "session_id": ["s"]}', b'{"input": "x", "instructions": 7}',
    b'{"input": "x", "conversation_history": [5]}', b'{"input": "x", "conversation_history": {"a": 1}}',
    b'{"input": "x", "conversation_history": [{"role": "user", "content": [{"type": "file"}]}]}',
    b'{"input": "x", "previous_response_id": {"a": 1}}', b'{"input": "x", "previous_response_id": 5}',
    b'{"input": "x", "conversation": {"a": 1}}', b'{"input": "x", "conversation": [1]}',
    b'{"input": "x", "conversation": 123456789012345678901234567890}', b'{"input": "x", "conversation": true}',
    b'{"input": "x", "stream": true, "instructions": 7}', b'{"input": "x", "store": "maybe", "truncation": 5}',
    b'{"input": "\\ud800", "conversation": "\\udfff"}', b'{"choice": {"a": 1}}', b'{"choice": "once", "all": [1]}',
]

QUERIES = [
    "?limit=abc", "?limit=-1", "?limit=99999999999999999999999999", "?offset=1e9", "?offset=-5",
    "?limit=%F0%9F%98%80", "?source=%00", "?source=%FF", "?include_children=%FF", "?limit=1&limit=x",
    "?%zz=1", "?" + "a=1&" * 2000, "?route=%00&status=abc&since=nope",
    # 0.20+'s message paging (domain/paging.py)
    "?order=%00", "?order=%FF&limit=1", "?order=latest&offset=9000000000000000000", "?limit=1_0&order=LATEST",
    # More digits than Python's int() reads from a string (4,300).
    "?order=latest&offset=" + "9" * 5000, "?limit=" + "1" * 5000,
]

# (headers, what they break): sent on one valid request per route.
HEADERS: list[tuple[list[bytes], str]] = [
    ([], "no key"),
    ([b"Authorization: Bearer wrong-key-0123456789"], "wrong key"),
    ([b"Authorization: Bearer \xff\xfe\xfd"], "non-UTF-8 key"),
    ([b"Authorization: bearer " + KEY.encode()], "lower-case scheme"),
    ([b"Authorization: Bearer " + KEY.encode() + b"\x00"], "NUL after the key"),
    ([b"Content-Length: abc"], "bad Content-Length"),
    ([b"Content-Length: 99999999999999999999"], "huge Content-Length"),
    ([b"Content-Type: application/json; charset=does-not-exist"], "unknown charset"),
    ([b"Content-Type: application/json; charset=utf-16"], "wrong charset"),
    ([b"X-Hermes-Session-Key: " + b"k" * 300], "oversized session key"),
    ([b"X-Hermes-Session-Key: \xff\xfe"], "non-UTF-8 session key"),
    ([b"X-Hermes-Session-Id: \xff\xfe"], "non-UTF-8 session id header"),
    ([b"Origin: http://evil.example"], "foreign origin"),
    ([b"Idempotency-Key: " + b"i" * 10_000], "oversized idempotency key"),
]

_BODY_METHODS = {"POST", "PATCH", "PUT"}


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes


BEARER = [b"Authorization: Bearer " + KEY.encode()]
# The herm.run routes take the key in x-api-key; their control route takes the bearer key.
HERM_RUN_KEYS = BEARER + [b"x-api-key: " + KEY.encode()]
HERM_RUN_HEADERS: list[tuple[list[bytes], str]] = [
    ([b"x-api-key: wrong-key-0123456789"], "wrong x-api-key"),
    ([b"x-api-key: \xff\xfe\xfd"], "non-UTF-8 x-api-key"),
    ([b"x-api-key: "], "empty x-api-key"),
]


def send(port: int, method: str, target: str, headers: list[bytes], body: bytes | None,
         keys: list[bytes] = BEARER) -> Answer:
    """One request as raw bytes on a fresh connection (`Connection: close`); each of `keys`
    is added unless the request names that header itself or is sent with "no key"."""
    lines = [f"{method} {target} HTTP/1.1".encode("latin-1"), b"Host: 127.0.0.1", b"Connection: close"]
    named = {line.split(b":", 1)[0].lower() for line in headers}
    if not any(b"no key" == h for h in headers):
        lines += [key for key in keys if key.split(b":", 1)[0].lower() not in named]
    lines += [h for h in headers if h != b"no key"]
    if body is not None and b"content-length" not in named:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    raw = b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered (and closed) before reading the whole body
        response = http.client.HTTPResponse(sock, method=method)
        response.begin()
        data = response.read()
        return Answer(response.status, response.getheader("content-type", ""), data)


_PARAMETER = re.compile(r"\{[^}]+\}")
# The names of 0.21.2's routes answered 501 by design.
UNSERVED_ROUTES = {r.name for r in unserved_0_21.UNIT.routes()}


def requests_for(template: str, methods: list[str],
                 headers: list[tuple[list[bytes], str]] = HEADERS) -> Iterator[tuple[str, str, list[bytes], bytes | None]]:
    """Every bad request this route gets: (method, target, extra header lines, body)."""
    valid_path = _PARAMETER.sub(EXISTING, template)
    for method in methods:
        body = b'{"message": "hi"}' if method in _BODY_METHODS else None
        if _PARAMETER.search(template):
            for raw_id in PATH_IDS:
                yield method, _PARAMETER.sub(lambda _, raw_id=raw_id: raw_id, template), [], body
        if method in _BODY_METHODS:
            for bad in BODIES:
                yield method, valid_path, [b"Content-Type: application/json"], bad
            yield method, valid_path, [], b" " * 2_000_000  # large, not JSON
        if method == "GET":
            for query in QUERIES:
                yield method, valid_path + query, [], None
        for lines, _ in headers:
            yield method, valid_path, lines or [b"no key"], body


def _feature_off(route: str, answer: Answer) -> bool:
    """0.19.0's constant answer of a feature a standalone API server lacks (no platform adapter
    connected): a documented 503 envelope, not a failure of the server. Likewise 0.21.2's routes
    hermes-server does not serve: their documented 501 (units/unserved_0_21.py, docs/differences.md)."""
    if route == "platform_events" and answer.status == 503:
        return bool(json.loads(answer.body)["error"]["code"] == "platform_unavailable")
    return (route in UNSERVED_ROUTES and answer.status == 501
            and json.loads(answer.body)["error"]["code"] == "not_implemented")


def _battery(server: RunningServer, routes: list, keys: list[bytes] = BEARER,
             headers: list[tuple[list[bytes], str]] = HEADERS) -> int:
    sent = 0
    failures = []
    for route in routes:
        for method, target, lines, body in requests_for(route.template, sorted(route.methods), headers):
            answer = send(server.port, method, target, lines, body, keys)
            sent += 1
            if answer.status >= 500 and not _feature_off(route.name, answer):
                failures.append(f"{method} {target[:80]} {lines} {(body or b'')[:60]!r} -> "
                                f"{answer.status} {answer.body[:200]!r}")
            elif answer.content_type.startswith("application/json"):
                json.loads(answer.body)  # whatever the status, the body is well-formed JSON
    assert failures == []
    return sent


@pytest.fixture(scope="module", params=sorted(PROFILES))
def both_servers(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RunningServer, RunningServer]]:
    """For each version profile: a server, and one with the fixture API for the /_fixture/ routes."""
    version = request.param
    profile = () if version == DEFAULT_VERSION else ("--hermes-version", version)  # 0.19.0 as served by default
    plain = start_server(tmp_path_factory.mktemp("plain") / "hermes", *profile)
    fixture = start_server(tmp_path_factory.mktemp("fixture") / "hermes", "--fixture-api", *profile)
    for srv in (plain, fixture):
        assert srv.client.post("/api/sessions", json={"id": EXISTING}).status_code == 201
        assert srv.client.get("/health").json()["version"] == version
    yield version, plain, fixture
    plain.stop()
    fixture.stop()


def test_bad_input_on_every_route_is_refused_without_a_5xx(
        both_servers: tuple[str, RunningServer, RunningServer]) -> None:
    """Every profile's route table (0.19.0's, and each newer one's with the routes it adds) and the
    /_fixture/ routes, under each profile (issue 20: every profile gets the same battery)."""
    version, plain, fixture = both_servers
    routes = build_routes(PROFILES[version])
    control_routes = build_fixture_routes(Control([], None)) + build_inspector_routes()
    sent = _battery(plain, routes) + _battery(fixture, control_routes)
    for srv in (plain, fixture):
        assert log_trouble(srv) == []
        assert integrity(srv.db_path) == "ok"
        assert lineage_problems(srv.db_path) == []
        assert srv.client.get(f"/api/sessions/{EXISTING}").status_code in (200, 404)  # still serving
    print(f"\nbad input ({version}): {sent} hand-written requests over {len(routes) + len(control_routes)}"
          " routes, no 5xx, no traceback")


def test_bad_input_on_the_herm_run_routes_is_refused_without_a_5xx(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The dialect's routes and its control route, served by `--herm-run --fixture-api`."""
    srv = start_server(tmp_path_factory.mktemp("herm-run") / "hermes", "--herm-run", "--fixture-api")
    try:
        seeded = srv.client.post("/_fixture/seed", json={"herm_run": {"sessions": [
            {"id": EXISTING, "agentId": "agent_1", "subjectId": "user_1"}]}})
        assert seeded.status_code == 200, seeded.text
        unopened = store_at(tmp_path_factory.mktemp("unused"))  # only for the route table
        routes = herm_run_routes(unopened) + herm_run_control_routes(unopened)
        sent = _battery(srv, routes, HERM_RUN_KEYS, HEADERS + HERM_RUN_HEADERS)
        assert log_trouble(srv) == []
        assert integrity(srv.home / "herm-run.db") == "ok"
        assert srv.client.get(f"/v1/sessions/{EXISTING}", headers={"x-api-key": KEY}).status_code in (200, 404)
    finally:
        srv.stop()
    print(f"\nbad input: {sent} hand-written requests over {len(routes)} herm.run routes, no 5xx, no traceback")
