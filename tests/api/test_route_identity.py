"""A route is covered by its own declaration: one added to a family (here a throwaway
`POST /api/sessions/{session_id}/pin`, added to the session family by this test alone) is in the
OpenAPI document, next to its family's routes, is hit by a `*` fault, and is judged by the
connector audit as its `Operation` says it behaves, with no other file of the server edited.

The fault operations, the audit's route sets and the fault kinds' routes are read off the served
table (testing/faults.py `ServedRoutes`), so nothing else has to know the route.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain.route_ids import RouteId
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.openapi.common import SESSION_ERRORS
from hermes_server.routes import sessions
from tests.support.server import RunningServer, start_server

pytestmark = pytest.mark.in_process

PIN = "/api/sessions/{session_id}/pin"


async def pin(request: Request, ctx: AppContext) -> Response:
    await read_json_object(request)
    return HermesJSONResponse({"object": "pinned", "id": request.path_params["session_id"]})


def _pin_route() -> Route:
    return Route(RouteId("session_pin"), PIN, {"POST": Method(pin, Operation(
        summary="Pin a session (a route of this test only)", responses={200: "SessionDeleted", **SESSION_ERRORS},
        effect=Effect.UNSAFE | Effect.WRITE))})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[RunningServer]:
    family_routes = sessions.routes
    monkeypatch.setattr(sessions, "routes", lambda: [*family_routes(), _pin_route()])
    srv = start_server(tmp_path / "home", "--fixture-api")
    yield srv
    srv.stop()


def test_a_new_route_of_a_family_reaches_the_document_faults_and_audit(server: RunningServer) -> None:
    c = server.client
    paths = list(c.get("/openapi.json").json()["paths"])
    # In the document, right after the routes its family lists before it.
    assert paths[paths.index("/api/sessions/{session_id}/fork") + 1] == PIN
    # Hit by a `*` fault (every session route), as the family's other routes are.
    assert c.put("/_fixture/faults", json={"kind": "status", "times": 1}).status_code == 200
    assert c.post("/api/sessions/s/pin", json={}).status_code == 503
    assert c.post("/api/sessions/s/pin", json={}).status_code == 200
    assert c.get("/_fixture/faults").json()["data"][0]["fired"] == 1
    # Judged by the audit as the unsafe call its operation declares: sent again unchanged after
    # an unknown outcome, with no read in between.
    journal = c.get("/_fixture/requests", params={"route": "session_pin"}).json()["data"]
    assert [entry["status"] for entry in journal] == [503, 200]
    findings = {f["rule"]: f["requests"] for f in c.get("/_fixture/audit").json()["findings"]}
    assert findings["unsafe-replay"] == [entry["seq"] for entry in journal]
