"""The control API under /_fixture/ (only with `serve --fixture-api`, same bearer key).

Reset to a known state, merge a fixture, install faults, read the request
journal, move the clock. These paths do not exist upstream, and without the
flag they are not routed at all, so they answer the framework 404 like any
unknown path (DECISIONS.md "Extensions").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.fixtures import control
from hermes_server.fixtures.clock import ManualClock
from hermes_server.fixtures.load import LoadResult, load_fixture
from hermes_server.fixtures.model import parse_fixture
from hermes_server.fixtures.validate import Checker, DocumentError
from hermes_server.http.auth import check_bearer
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Route
from hermes_server.openapi import AUTH_ERRORS, BODY_ERRORS, JOURNAL_FILTERS, Operation
from hermes_server.services import Services


def _rejected(exc: DocumentError, code: str) -> ApiError:
    """A rejected fixture/fault document: 400 naming the JSON path of the first problem."""
    return ApiError(400, str(exc), code, exc.path)


def _has_body(request: Request) -> bool:
    return request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers


async def _optional_object(request: Request, svc: Services) -> dict[str, Any]:
    """A JSON object body, or {} when the request has none (`curl -X POST`)."""
    if not _has_body(request):
        return {}
    return await read_json_object(request, svc.settings.max_request_bytes)


def _loaded(obj: str, result: LoadResult, **extra: Any) -> Response:
    return HermesJSONResponse({"object": obj, **extra, **result.as_json()})


async def reset(request: Request, svc: Services) -> Response:
    """POST /_fixture/reset {"to": "fixture"|"empty"}: default is the start fixture if there is one."""
    check_bearer(request, svc.settings.api_key)
    body = await _optional_object(request, svc)
    check = Checker()
    obj = check.obj(body, "$", ("to",))
    default = "fixture" if svc.fixture_document is not None else "empty"
    to = check.choice(obj or {}, "to", "$", ("fixture", "empty"), default=default)
    if to == "fixture" and svc.fixture_document is None:
        check.fail("$.to", "this server was started without --fixture")
    if check.problems:
        raise _rejected(DocumentError(check.problems), "invalid_reset")
    try:
        result = await control.reset(svc, to_fixture=to == "fixture")
    except DocumentError as exc:  # the start fixture no longer fits (e.g. edited clock rules)
        raise _rejected(exc, "invalid_fixture") from None
    return _loaded("hermes.fixture.reset", result, to=to)


async def seed(request: Request, svc: Services) -> Response:
    """POST /_fixture/seed: merge a fixture document into state.db, all or nothing."""
    check_bearer(request, svc.settings.api_key)
    document = await read_json_object(request, svc.settings.max_request_bytes)
    try:
        result = await load_fixture(svc.db, parse_fixture(document, svc.now()))
    except DocumentError as exc:
        raise _rejected(exc, "invalid_fixture") from None
    return _loaded("hermes.fixture.seeded", result)


def _fault_list(svc: Services) -> Response:
    assert svc.faults is not None
    return HermesJSONResponse({"object": "list", "data": svc.faults.as_json()})


async def faults(request: Request, svc: Services) -> Response:
    """GET lists, PUT replaces, POST adds to, DELETE clears the installed faults."""
    check_bearer(request, svc.settings.api_key)
    registry = svc.faults
    assert registry is not None  # this route exists only with the registry
    if request.method == "DELETE":
        registry.clear()
    elif request.method in ("PUT", "POST"):
        document = await read_json_object(request, svc.settings.max_request_bytes) if _has_body(request) else {"faults": []}
        keep = registry.faults if request.method == "POST" else []
        try:
            parsed = registry.parse(document, taken={f.id for f in keep})
        except DocumentError as exc:
            raise _rejected(exc, "invalid_fault") from None
        registry.replace(keep + parsed)
    return _fault_list(svc)


def _query(request: Request) -> dict[str, str]:
    return dict(parse_qsl(request.scope.get("query_string", b"").decode("utf-8", "replace")))


async def requests(request: Request, svc: Services) -> Response:
    """GET the journal (filters: route, method, session_id, status; bodies=true), DELETE clears it."""
    check_bearer(request, svc.settings.api_key)
    journal = svc.journal
    assert journal is not None
    if request.method == "DELETE":
        journal.clear()
        return HermesJSONResponse({"object": "list", "data": []})
    query = _query(request)
    bodies = query.pop("bodies", "").lower() in ("1", "true", "yes")
    entries = journal.select(query)
    return HermesJSONResponse({"object": "list", "data": [e.as_json(bodies) for e in entries]})


async def clock(request: Request, svc: Services) -> Response:
    """GET reads, POST sets {"now", "advance", "step"}; setting makes the clock manual."""
    check_bearer(request, svc.settings.api_key)
    if request.method == "POST":
        body = await _optional_object(request, svc)
        check = Checker()
        obj = check.obj(body, "$", ("now", "advance", "step")) or {}
        now = check.timestamp(obj, "now", "$")
        advance = check.number(obj, "advance", "$")
        step = check.number(obj, "step", "$", minimum=0)
        if check.problems:
            raise _rejected(DocumentError(check.problems), "invalid_clock")
        if not isinstance(svc.clock, ManualClock):
            svc.clock = ManualClock(svc.clock(), 0.0)
        manual = svc.clock
        if now is not None:
            manual.set(now)
        if advance is not None:
            manual.advance(advance)
        if step is not None:
            manual.step = step
    current = svc.clock
    manual_clock = current if isinstance(current, ManualClock) else None
    return HermesJSONResponse({
        "object": "hermes.fixture.clock",
        "now": manual_clock.peek() if manual_clock else current(),
        "step": manual_clock.step if manual_clock else None,
        "manual": manual_clock is not None,
        "deterministic": svc.settings.deterministic,
    })


def build_fixture_routes() -> list[Route]:
    """The /_fixture/ routes, added to the route table only with `serve --fixture-api`."""
    def op(summary: str, *, body: bool = False, query: tuple[str, ...] = ()) -> Operation:
        errors = {**BODY_ERRORS, **AUTH_ERRORS} if body else AUTH_ERRORS
        return Operation(summary, {200: "FixtureReply", **errors}, body="FixtureRequest" if body else None, query=query)

    return [
        Route("fixture_reset", "/_fixture/reset", {"POST": reset}, {
            "POST": op("Reset state.db to the start fixture or to empty ({\"to\": \"fixture\"|\"empty\"})", body=True)}),
        Route("fixture_seed", "/_fixture/seed", {"POST": seed}, {
            "POST": op("Merge a fixture document into state.db, all or nothing", body=True)}),
        Route("fixture_faults", "/_fixture/faults", {"GET": faults, "PUT": faults, "POST": faults, "DELETE": faults}, {
            "GET": op("List the installed faults"),
            "PUT": op("Replace the installed faults", body=True),
            "POST": op("Add faults", body=True),
            "DELETE": op("Remove every fault"),
        }),
        Route("fixture_requests", "/_fixture/requests", {"GET": requests, "DELETE": requests}, {
            "GET": op("The request journal", query=JOURNAL_FILTERS),
            "DELETE": op("Empty the request journal"),
        }),
        Route("fixture_clock", "/_fixture/clock", {"GET": clock, "POST": clock}, {
            "GET": op("Read the clock"),
            "POST": op("Set, advance or step the clock (it becomes manual)", body=True),
        }),
    ]
