"""The route contract: what /openapi.json declares about credentials is what the server does.

Every operation of the document is called with no credential at all, on a server serving
every family (Hermes, test control, herm.run). It is refused exactly when the operation
declares a security scheme, with that scheme's own refusal; the pipeline runs the
scheme's check from the operation, so no handler can forget it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes_server.config import Settings
from hermes_server.http.errors import ErrorMap
from hermes_server.http.pipeline import Pipeline
from hermes_server.http.routing import Method, Operation, Route, Router
from tests.support.server import RunningServer, start_server

# Each scheme's refusal of a keyless call: status, and the body it answers with.
REFUSALS: dict[str, tuple[int, Any]] = {
    "bearer": (401, {"error": {"message": "Invalid API key", "type": "invalid_request_error",
                               "code": "invalid_api_key"}}),
    "fireToken": (401, {"error": "invalid fire token"}),
    "hermRunKey": (401, {"error": {"type": "unauthorized", "message": "missing or invalid x-api-key header",
                                   "param": None}}),
}
# Schemes whose credential is not the server's key: refused even by a server without one.
NOT_THE_SERVER_KEY = {"fireToken"}
FAMILIES = ("--fixture-api", "--herm-run")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("contract") / "hermes", *FAMILIES)
    yield srv
    srv.stop()


def operations(server: RunningServer) -> list[tuple[str, str, str | None]]:
    """(method, path, the scheme it declares or None) for every operation of the served document."""
    document = httpx.get(server.url + "/openapi.json", timeout=10).json()
    found = []
    for template, item in document["paths"].items():
        for method, operation in item.items():
            schemes = [name for requirement in operation["security"] for name in requirement]
            assert len(schemes) <= 1, (method, template)
            assert all(name in document["components"]["securitySchemes"] for name in schemes)
            found.append((method.upper(), template, schemes[0] if schemes else None))
    return found


def keyless(server: RunningServer, method: str, template: str) -> httpx.Response:
    """The operation called with no Authorization, no x-api-key, and an empty object body."""
    path = re.sub(r"\{[^}]+\}", "probe", template)
    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
    return httpx.request(method, server.url + path, content=body, timeout=30,
                         headers={"Content-Type": "application/json"} if body else {})


def test_the_document_covers_every_family(keyed: RunningServer) -> None:
    schemes = {scheme for _, _, scheme in operations(keyed)}
    assert schemes == {None, *REFUSALS}
    paths = {template for _, template, _ in operations(keyed)}
    assert {"/_fixture/reset", "/v1/sandboxes/warm", "/api/cron/fire"} <= paths


def test_a_keyless_call_is_refused_exactly_when_the_operation_declares_security(keyed: RunningServer) -> None:
    for method, template, scheme in operations(keyed):
        response = keyless(keyed, method, template)
        if scheme is None:
            assert response.status_code != 401, (method, template)
        else:
            status, body = REFUSALS[scheme]
            assert (response.status_code, response.json()) == (status, body), (method, template)


def test_a_server_without_a_key_refuses_only_credentials_that_are_not_its_key(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", *FAMILIES, key=None)
    try:
        for method, template, scheme in operations(srv):
            response = keyless(srv, method, template)
            refused = scheme in NOT_THE_SERVER_KEY
            assert (response.status_code == 401) == refused, (method, template, response.status_code)
    finally:
        srv.stop()


def test_an_operation_naming_a_scheme_without_a_check_is_refused_when_the_app_is_built(tmp_path: Path) -> None:
    async def endpoint(*_: Any) -> None: ...

    route = Route("r", "/r", {"GET": Method(endpoint, Operation(summary="s", responses={}, security="nobody"))})
    with pytest.raises(ValueError, match="nobody"):
        Pipeline(Settings(home=tmp_path), Router([route]), None, ErrorMap({}), checks={})


def test_the_key_is_checked_before_any_fault_acts(keyed: RunningServer) -> None:
    fault = {"route": "sessions", "kind": "status", "status": 503, "times": "always"}
    assert keyed.client.put("/_fixture/faults", json=fault).status_code == 200
    try:
        assert keyless(keyed, "GET", "/api/sessions").status_code == 401
        assert keyed.client.get("/_fixture/faults").json()["data"][0]["fired"] == 0
        assert keyed.client.get("/api/sessions").status_code == 503
    finally:
        assert keyed.client.delete("/_fixture/faults").status_code == 200
