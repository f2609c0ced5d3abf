"""The control API under /_fixture/ (only with `serve --fixture-api`, same bearer key).

Reset to a known state, merge a fixture, install faults, read the request
journal and its audit, move the clock. These paths do not exist upstream, and without the
flag they are not routed at all, so they answer the framework 404 like any
unknown path (docs/differences.md, "Extensions").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.families import FixtureParts
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Endpoint, Method, Operation, Route
from hermes_server.openapi.common import AUTH_ERRORS, BODY_ERRORS
from hermes_server.openapi.control_schemas import JOURNAL_FILTERS
from hermes_server.testing.audit import report
from hermes_server.testing.faults import FaultRegistry, ServedRoutes
from hermes_server.testing.journal import Journal
from hermes_server.testing.load import LoadResult, StartFixture, load_document
from hermes_server.testing.validate import Checker

if TYPE_CHECKING:
    from hermes_server.context import AppContext


class ControlState(Protocol):
    """What the control routes act on (testing/control.py's `Control`)."""

    faults: FaultRegistry
    served: ServedRoutes
    journal: Journal
    start_fixture: StartFixture | None
    # The fixture parts of the served dialects (a seed reaches their stores too).
    parts: FixtureParts

    async def reset(self, ctx: AppContext, to_fixture: bool) -> LoadResult: ...


def _has_body(request: Request) -> bool:
    return request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers


async def _optional_object(request: Request, ctx: AppContext) -> dict[str, Any]:
    """A JSON object body, or {} when the request has none (`curl -X POST`)."""
    if not _has_body(request):
        return {}
    return await read_json_object(request)


def _loaded(obj: str, result: LoadResult, **extra: Any) -> Response:
    return HermesJSONResponse({"object": obj, **extra, **result.as_json()})


def _query(request: Request) -> dict[str, str]:
    return dict(parse_qsl(request.scope.get("query_string", b"").decode("utf-8", "replace")))


class ControlRoutes:
    """The handlers, bound to one server's control state."""

    def __init__(self, control: ControlState) -> None:
        self.control = control

    async def reset(self, request: Request, ctx: AppContext) -> Response:
        """POST /_fixture/reset {"to": "fixture"|"empty"}: default is the start fixture if there is one."""
        body = await _optional_object(request, ctx)
        check = Checker()
        obj = check.obj(body, "$", ("to",))
        has_fixture = self.control.start_fixture is not None
        to = check.choice(obj or {}, "to", "$", ("fixture", "empty"), default="fixture" if has_fixture else "empty")
        if to == "fixture" and not has_fixture:
            check.fail("$.to", "this server was started without --fixture")
        check.raise_if_any("invalid_reset")
        # A start fixture that no longer fits (e.g. edited clock rules) is an invalid_fixture 400.
        result = await self.control.reset(ctx, to_fixture=to == "fixture")
        return _loaded("hermes.fixture.reset", result, to=to)

    async def seed(self, request: Request, ctx: AppContext) -> Response:
        """POST /_fixture/seed: merge a fixture document into state.db (and the served dialects' stores), all or nothing."""
        document = await read_json_object(request)
        result = await load_document(ctx.db, document, ctx.now(), parts=self.control.parts)
        return _loaded("hermes.fixture.seeded", result)

    async def faults(self, request: Request, ctx: AppContext) -> Response:
        """GET lists, PUT replaces, POST adds to, DELETE clears the installed faults."""
        registry = self.control.faults
        if request.method == "DELETE":
            registry.clear()
        elif request.method in ("PUT", "POST"):
            has_body = _has_body(request)
            document = await read_json_object(request) if has_body else {"faults": []}
            keep = registry.faults if request.method == "POST" else []
            registry.replace(keep + registry.parse(document, taken={f.id for f in keep}))
        return HermesJSONResponse({"object": "list", "data": registry.as_json()})

    async def requests(self, request: Request, ctx: AppContext) -> Response:
        """GET the journal (filters: route, method, session_id, status; bodies=true), DELETE clears it."""
        journal = self.control.journal
        if request.method == "DELETE":
            journal.clear()
            return HermesJSONResponse({"object": "list", "data": []})
        query = _query(request)
        bodies = query.pop("bodies", "").lower() in ("1", "true", "yes")
        entries = journal.select(query)
        return HermesJSONResponse({"object": "list", "data": [e.as_json(bodies) for e in entries]})

    async def audit(self, request: Request, ctx: AppContext) -> Response:
        """GET the audit: every rule (testing/audit.py) over the journal since it was last emptied."""
        return HermesJSONResponse(report(self.control.journal.entries, self.control.served.effects))

    async def clock(self, request: Request, ctx: AppContext) -> Response:
        """GET reads, POST sets {"now", "advance", "step"}; setting makes the clock manual."""
        clock = ctx.clock
        if request.method == "POST":
            body = await _optional_object(request, ctx)
            check = Checker()
            obj = check.obj(body, "$", ("now", "advance", "step")) or {}
            now = check.timestamp(obj, "now", "$")
            advance = check.number(obj, "advance", "$")
            step = check.number(obj, "step", "$", minimum=0)
            check.raise_if_any("invalid_clock")
            clock.make_manual()
            if now is not None:
                clock.set(now)
            if advance is not None:
                clock.advance(advance)
            if step is not None:
                clock.set_step(step)
        manual = clock.manual
        return HermesJSONResponse({
            "object": "hermes.fixture.clock",
            "now": clock.peek() if manual else clock.now(),
            "step": clock.step if manual else None,
            "manual": manual,
            "deterministic": ctx.settings.deterministic,
        })


def _op(handler: Endpoint, summary: str, *, body: bool = False, query: tuple[str, ...] = ()) -> Method:
    errors = {**BODY_ERRORS, **AUTH_ERRORS} if body else AUTH_ERRORS
    return Method(handler, Operation(summary=summary, responses={200: "FixtureReply", **errors},
                                     body="FixtureRequest" if body else None, query=query))


def build_fixture_routes(control: ControlState) -> list[Route]:
    """The /_fixture/ routes, added to the route table only with `serve --fixture-api`."""
    handlers = ControlRoutes(control)
    faults: Endpoint = handlers.faults
    journal: Endpoint = handlers.requests
    return [
        Route("fixture_reset", "/_fixture/reset", {
            "POST": _op(handlers.reset, "Reset state.db to the start fixture or to empty "
                                        "({\"to\": \"fixture\"|\"empty\"})", body=True)}),
        Route("fixture_seed", "/_fixture/seed", {
            "POST": _op(handlers.seed, "Merge a fixture document into state.db, all or nothing", body=True)}),
        Route("fixture_faults", "/_fixture/faults", {
            "GET": _op(faults, "List the installed faults"),
            "PUT": _op(faults, "Replace the installed faults", body=True),
            "POST": _op(faults, "Add faults", body=True),
            "DELETE": _op(faults, "Remove every fault"),
        }),
        Route("fixture_requests", "/_fixture/requests", {
            "GET": _op(journal, "The request journal", query=JOURNAL_FILTERS),
            "DELETE": _op(journal, "Empty the request journal"),
        }),
        Route("fixture_audit", "/_fixture/audit", {
            "GET": _op(handlers.audit, "The audit of the request journal: what the connector did against the contract"),
        }),
        Route("fixture_clock", "/_fixture/clock", {
            "GET": _op(handlers.clock, "Read the clock"),
            "POST": _op(handlers.clock, "Set, advance or step the clock (it becomes manual)", body=True),
        }),
    ]
