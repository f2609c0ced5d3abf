"""The OpenAPI document of a server with the dialect: its operations, references, and schemathesis on them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from hermes_server.app import build_routes
from hermes_server.hermrun.routes import build_routes as herm_run_routes
from tests.api.test_openapi import _documented, _refs, _served
from tests.hermrun.support import KEY, store_at
from tests.support.server import start_server


def test_the_document_describes_exactly_what_is_served_and_every_reference_resolves(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "home", "--herm-run")
    try:
        document: dict[str, Any] = httpx.get(srv.url + "/openapi.json", timeout=10).json()
    finally:
        srv.stop()
    served = [*build_routes(), *herm_run_routes(store_at(tmp_path / "unused"))]
    assert _documented(document) == _served(served)
    for ref in set(_refs(document)):
        node: Any = document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        assert isinstance(node, dict), ref


def test_schemathesis_finds_no_5xx_and_no_schema_violation_on_the_dialect(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "home", "--herm-run")
    report = tmp_path / "schemathesis.json"
    try:
        command = [
            sys.executable, "-m", "schemathesis.cli", "run", f"{srv.url}/openapi.json",
            "--header", f"x-api-key: {KEY}", "--include-path-regex", "^/v1/(sessions|sandboxes)",
            "--checks", "all", "--exclude-checks", "positive_data_acceptance",
            "--max-examples", "25", "--seed", "20260", "--workers", "1",
            "--generation-database", "none", "--request-timeout", "10",
            "--no-color", "--report", "json", "--report-json-path", str(report),
        ]
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        log = srv.log()
    finally:
        srv.stop()
    summary = run.stdout[-3000:]
    assert run.returncode == 0, summary
    result = json.loads(report.read_text())
    assert result["failures"] == [] and result["errors"] == [], summary
    assert result["operations"]["tested"] == 7, summary
    statuses = re.findall(r"hermes_server\.access: \S+ \S+ (\d{3}) ", log)
    assert statuses and not [status for status in statuses if status.startswith("5")]
