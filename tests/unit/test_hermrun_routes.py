"""The herm.run route table: documented completely, and disjoint from the Hermes routes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hermes_server.app import build_routes as hermes_routes
from hermes_server.hermrun import openapi
from hermes_server.hermrun.routes import build_routes
from tests.hermrun.support import store_at


def test_every_operation_names_only_defined_fragments(tmp_path: Path) -> None:
    routes = build_routes(store_at(tmp_path))
    for route in routes:
        for op in (method.operation for method in route.methods.values()):
            assert set(op.responses.values()) <= set(openapi.RESPONSES), route.name
            assert set(op.query) | set(op.headers) <= set(openapi.PARAMETERS), route.name
            assert op.body is None or op.body in openapi.SCHEMAS, route.name
    refs = re.findall(r'"#/components/schemas/([^"]+)"', json.dumps([openapi.RESPONSES, openapi.SCHEMAS]))
    assert set(refs) <= set(openapi.SCHEMAS)


def test_no_name_or_path_is_shared_with_the_hermes_routes(tmp_path: Path) -> None:
    ours = build_routes(store_at(tmp_path))
    theirs = hermes_routes()
    assert not {r.name for r in ours} & {r.name for r in theirs}
    assert not {r.template for r in ours} & {r.template for r in theirs}
    assert [r.template for r in ours] == ["/v1/sessions", "/v1/sessions/{session_id}",
                                          "/v1/sessions/{session_id}/archive", "/v1/sandboxes/warm"]
