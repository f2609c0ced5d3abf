"""/openapi.json covers exactly what is served, and schemathesis finds nothing against it.

The schemathesis run is bounded and repeatable: a fixed seed, one worker, at most
`MAX_EXAMPLES` generated cases per operation and phase (about 700 requests in all,
a few seconds), no example database kept between runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes_server.app import build_routes
from hermes_server.domain.profiles import PROFILES
from hermes_server.http.routing import Route
from hermes_server.testing.control import Control
from hermes_server.testing.inspector import build_inspector_routes
from hermes_server.testing.routes import build_fixture_routes
from hermes_server.units import unserved_0_21
from tests.support.openapi import profile_document, resolved
from tests.support.server import RunningServer, start_server

MAX_EXAMPLES = 25
SEED = 20260
METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def document(server: RunningServer) -> dict[str, Any]:
    response = httpx.get(server.url + "/openapi.json", timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    # It carries the reference's prose (docs/api.md is generated from it): 70 KB for 0.19.0.
    assert len(response.content) < 128 * 1024
    return response.json()


@pytest.mark.parametrize("version", sorted(PROFILES))
def test_every_method_of_every_route_is_described(version: str) -> None:
    document = profile_document(version, fixture_api=True)
    components = document["components"]
    for item in document["paths"].values():
        for op in item.values():
            for name in (ref["$ref"].rsplit("/", 1)[1] for ref in op["responses"].values()):
                assert name in components["responses"], (op["operationId"], name)
            assert all(ref["$ref"].rsplit("/", 1)[1] in components["parameters"] for ref in op.get("parameters", ()))


def _documented(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(path, method.upper()) for path, item in document["paths"].items() for method in item}


def _served(routes: list[Route]) -> set[tuple[str, str]]:
    return {(route.template, method) for route in routes for method in route.methods}


def test_document_lists_exactly_the_served_operations(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    assert _documented(document) == _served(build_routes())


def test_fixture_api_is_documented_only_when_served(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", "--fixture-api")
    try:
        document = httpx.get(srv.url + "/openapi.json", timeout=10).json()
    finally:
        srv.stop()
    fixture_routes = [*build_fixture_routes(Control([], None)), *build_inspector_routes()]
    assert _documented(document) == _served([*build_routes(), *fixture_routes])


def test_documented_operations_reach_their_handlers(server: RunningServer, document: dict[str, Any]) -> None:
    """No documented operation is answered by the router's own 404 or 405."""
    for path, item in document["paths"].items():
        for method in item:
            response = server.client.request(method.upper(), re.sub(r"\{[^}]+\}", "__absent__", path), json={})
            assert not response.headers["content-type"].startswith("text/plain"), (method, path)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_every_reference_resolves(document: dict[str, Any]) -> None:
    refs = set(_refs(document))
    assert refs
    for ref in refs:
        node: Any = document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        assert isinstance(node, dict), ref


def _checks_config(document: dict[str, Any]) -> str:
    """Every check, with two exceptions (in a config file: command-line check options would override
    its per-operation settings):

    - positive_data_acceptance: whether a well-formed request succeeds depends on state (titles in
      use, ids taken) that no schema can express;
    - negative_data_rejection on the operations that take a body: the request schemas say what a
      client should send, and the server reads a body as upstream does, which takes more (a title of
      any JSON type stringified, a falsy `end_reason` or `system_message` ignored, `stream: "yes"`);
      each such field's description says so (tests/reliability/test_bad_input.py sends every route
      wrong field types, and no answer may be a 5xx). Everything else of those operations (status codes, answer schemas,
      headers, 5xx) is checked, and negative data is still checked on every other operation."""
    with_body = sorted(op["operationId"] for item in document["paths"].values() for op in item.values()
                       if "requestBody" in op)
    return "\n".join([
        "[checks]", "positive_data_acceptance.enabled = false", "",
        "[[operations]]", f"include-operation-id = {json.dumps(with_body)}",
        "checks.negative_data_rejection.enabled = false", "",
    ])


def _schemathesis(server: RunningServer, tmp_path: Path, routes: list[Route], only: list[str] | None = None) -> None:
    """Schemathesis over the server's own document (`only` these operation ids, when given): no 5xx,
    no answer its schema does not allow."""
    report = tmp_path / "schemathesis.json"
    config = tmp_path / "schemathesis.toml"
    config.write_text(_checks_config(httpx.get(f"{server.url}/openapi.json", timeout=10).json()), encoding="utf-8")
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{server.url}/openapi.json",
        "--header", f"Authorization: Bearer {server.key}",
        # Its answer is a constant 503 by design (no platform adapter exists without a gateway),
        # which the server-error check would flag; tests/api/test_catalog.py covers it.
        "--exclude-path", "/api/platforms/{platform}/events",
        "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--workers", "1",
        # No --max-time: with it, fuzzing and stateful phases repeat until the budget is spent.
        "--generation-database", "none", "--request-timeout", "10",
        "--no-color", "--report", "json", "--report-json-path", str(report),
        *(arg for operation_id in only or () for arg in ("--include-operation-id", operation_id)),
    ]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=150)
    summary = run.stdout[-3000:]
    assert run.returncode == 0, summary
    result = json.loads(report.read_text())
    assert result["failures"] == [] and result["errors"] == [], summary
    # schemathesis leaves out the operation that serves the document it is reading, and the
    # platform-events one is excluded above.
    served = sum(len(route.methods) for route in routes)
    assert result["operations"]["total"] == served - 1
    assert result["operations"]["tested"] == (served - 2 if only is None else len(only))
    cases = result["test_cases"]
    assert cases["with_failures"] == 0 and cases["errored"] == 0
    assert cases["generated"] >= (300 if only is None else 20 * len(only)), summary
    assert all(phase["status"] == "success" for phase in result["phases"].values()), result["phases"]
    # The access log agrees: no request was answered with a 5xx.
    answers = re.findall(r"hermes_server\.access: \S+ (\S+) (\d{3}) ", server.log())
    assert len(answers) >= cases["generated"]
    assert not [(route, status) for route, status in answers
                if status.startswith("5") and route != "/api/platforms/{platform}/events"]


def test_schemathesis_finds_no_5xx_and_no_schema_violation(server: RunningServer, tmp_path: Path) -> None:
    _schemathesis(server, tmp_path, build_routes())


def _changed_operations(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Operation ids of `new` that `old` lacks or documents otherwise (its 401 aside: every
    operation has it, and the hand-written battery and test_profiles.py cover the envelope)."""
    def operations(document: dict[str, Any]) -> dict[str, Any]:
        return {op["operationId"]: resolved({**op, "responses": {k: v for k, v in op["responses"].items()
                                                                   if k != "401"}}, document)
                for item in document["paths"].values() for op in item.values()}

    before = operations(old)
    return sorted(name for name, op in operations(new).items() if before.get(name) != op)


@pytest.mark.parametrize("version", ["0.20.4", "0.21.2"])
def test_schemathesis_finds_no_5xx_and_no_schema_violation_on_a_newer_profile(tmp_path: Path, version: str) -> None:
    """The same run over a version profile's document, on every operation it adds or documents
    otherwise than 0.19.0 (the rest is 0.19.0's run above; every route of every profile gets the
    hand-written battery, tests/reliability/test_bad_input.py), so the suite stays short (issue 20)."""
    srv = start_server(tmp_path / "hermes", "--hermes-version", version)
    try:
        document = httpx.get(srv.url + "/openapi.json", timeout=10).json()
        changed = _changed_operations(profile_document(), document)
        expected = {"model_options", "session_model_lock", "run_steer", "session_messages", "session_chat",
                    "session_chat_stream", "sessions", "session_create", "session", "session_update",
                    "session_fork", "run_status",
                    *(("runs", "run_stop", "capabilities_get") if version == "0.21.2" else ())}
        assert expected <= set(changed), changed
        # 0.21.2's routes that are not served answer a documented 501 by design (as the platform
        # route's 503 above), which the server-error check would flag; tests/api/test_runs_021.py
        # and the battery cover them.
        not_served = {op["operationId"] for route in unserved_0_21.UNIT.routes()
                      for op in document["paths"].get(route.template, {}).values()}
        changed = [name for name in changed if name not in not_served]
        print(f"\n{version}: schemathesis on {', '.join(changed)}")
        _schemathesis(srv, tmp_path, build_routes(PROFILES[version]), changed)
    finally:
        srv.stop()
