"""Test control is not even imported unless it is switched on (checked in a served process).

The server runs in a process of its own whose main thread is the real `hermes-server
serve`; a side thread waits for it, sends a request to every Hermes route, writes the
process's `sys.modules` to a file and stops the server with SIGTERM.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import KEY, clean_env, free_port

pytestmark = pytest.mark.slow

PROBE = r"""
import json, os, signal, sys, threading, time, urllib.request

from hermes_server.cli import main

out, port = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{port}"
CALLS = [
    ("GET", "/health", None), ("GET", "/health/detailed", None), ("GET", "/v1/models", None),
    ("GET", "/v1/capabilities", None), ("GET", "/openapi.json", None),
    ("POST", "/api/sessions", {"id": "imp"}), ("GET", "/api/sessions", None), ("GET", "/api/sessions/imp", None),
    ("PATCH", "/api/sessions/imp", {"title": "t"}), ("GET", "/api/sessions/imp/messages", None),
    ("POST", "/api/sessions/imp/chat", {"message": "hi"}), ("POST", "/api/sessions/imp/chat/stream", {"message": "hi"}),
    ("POST", "/api/sessions/imp/fork", {"id": "imp2"}), ("POST", "/v1/chat/completions",
     {"messages": [{"role": "user", "content": "hi"}]}), ("DELETE", "/api/sessions/imp", None),
]


def call(method, path, body):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Authorization": "Bearer " + os.environ["PROBE_KEY"]})
    with urllib.request.urlopen(request, timeout=10) as response:
        response.read()
        return response.status


def probe():
    for _ in range(400):
        try:
            call("GET", "/health", None)
            break
        except OSError:
            time.sleep(0.05)
    statuses = [call(*c) for c in CALLS]
    with open(out, "w") as f:
        json.dump({"statuses": statuses, "modules": sorted(m for m in sys.modules if m.startswith("hermes_server"))}, f)
    os.kill(os.getpid(), signal.SIGTERM)


threading.Thread(target=probe, daemon=True).start()
sys.exit(main(sys.argv[3:]))
"""


def served_modules(tmp_path: Path, *flags: str) -> list[str]:
    out = tmp_path / "modules.json"
    port = free_port()
    args = [sys.executable, "-c", PROBE, str(out), str(port), "serve", "--home", str(tmp_path / "home"),
            "--port", str(port), "--api-key", KEY, *flags]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, env=clean_env(PROBE_KEY=KEY))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert all(200 <= status < 300 for status in report["statuses"]), report["statuses"]
    return report["modules"]


def control_modules(modules: list[str]) -> set[str]:
    return {m for m in modules if m == "hermes_server.testing" or m.startswith("hermes_server.testing.")}


def test_the_default_server_imports_no_test_control(tmp_path: Path) -> None:
    modules = served_modules(tmp_path)
    assert "hermes_server.routes.sessions" in modules  # the probe really served the routes
    assert control_modules(modules) == set()
    # Of the herm.run dialect only its declaration (option rows, fixture key), never its routes or store.
    assert [m for m in modules if m.startswith("hermes_server.hermrun")] == [
        "hermes_server.hermrun", "hermes_server.hermrun.dialect"]


def test_the_herm_run_dialect_alone_imports_no_test_control(tmp_path: Path) -> None:
    modules = served_modules(tmp_path, "--herm-run")
    assert {"hermes_server.hermrun.routes", "hermes_server.hermrun.store"} <= set(modules)
    assert control_modules(modules) == set()


def test_a_start_fixture_imports_only_the_fixture_format_and_loading(tmp_path: Path) -> None:
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"sessions": [{"id": "seeded"}]}))
    assert control_modules(served_modules(tmp_path, "--fixture", str(fixture), "--deterministic")) == {
        "hermes_server.testing", "hermes_server.testing.load", "hermes_server.testing.model",
        "hermes_server.testing.validate",
    }


def test_the_fixture_api_brings_the_control_layers(tmp_path: Path) -> None:
    modules = control_modules(served_modules(tmp_path, "--fixture-api"))
    assert {"hermes_server.testing.control", "hermes_server.testing.fault_layer", "hermes_server.testing.journal"} <= modules
