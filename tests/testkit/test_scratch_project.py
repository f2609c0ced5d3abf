"""Acceptance: a project that only `pip install`s hermes-server (from this checkout, into a fresh
venv) gets the fixtures, markers and control client with no conftest, under pytest and `-n 2`.

About 15 s: the venv and the install take most of it (dependencies come from pip's cache or
the package registry)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.testkit.support import inner_env, run_pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

CONNECTOR_TESTS = '''
import httpx
import pytest

from hermes_server.testkit import FixtureClient


def test_lists_sessions(hermes):
    assert httpx.get(f"{hermes.base_url}/api/sessions", headers=hermes.headers).json()["data"] == []
    hermes.control.assert_called("sessions_list", times=1)


@pytest.mark.hermes_fixture("fixtures/case.json")
def test_reads_a_seeded_transcript(hermes):
    messages = httpx.get(f"{hermes.base_url}/api/sessions/case-1/messages", headers=hermes.headers).json()
    assert [m["content"] for m in messages["data"]] == ["What changed?", "Three files."]


@pytest.mark.hermes_faults([{"route": "session_get", "kind": "status", "status": 503, "times": 1}])
def test_retries_after_a_503(hermes):
    client = httpx.Client(base_url=hermes.base_url, headers=hermes.headers)
    client.post("/api/sessions", json={"id": "s"})
    statuses = [client.get("/api/sessions/s").status_code for _ in range(2)]
    assert statuses == [503, 200]
    hermes.control.assert_called("session_get", times=2, session_id="s")
    hermes.control.assert_no_key_in_bodies()


def test_state_does_not_leak_between_tests(hermes):
    assert httpx.get(f"{hermes.base_url}/api/sessions/s", headers=hermes.headers).status_code == 404


def test_a_client_of_its_own(hermes_server):
    with FixtureClient(hermes_server.base_url, hermes_server.api_key) as control:
        assert control.clock.get().manual is False
'''

CASE = {"sessions": [{"id": "case-1", "messages": [{"role": "user", "content": "What changed?"},
                                                    {"role": "assistant", "content": "Three files."}]}]}


def test_a_scratch_project_uses_the_plugin_under_pytest_and_xdist(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                              str(REPO), "pytest", "pytest-xdist"], capture_output=True, text=True, timeout=300,
                             env=inner_env(tmp_path), stdin=subprocess.DEVNULL)
    assert install.returncode == 0, install.stdout + install.stderr
    installed = time.perf_counter() - started

    project = tmp_path / "connector"
    files = {"tests/test_connector.py": CONNECTOR_TESTS, "tests/fixtures/case.json": json.dumps(CASE)}
    python = str(venv / "bin" / "python")
    serial = run_pytest(project, files, "-q", python=python)
    assert serial.returncode == 0, serial.output
    assert "5 passed" in serial.output and "hermes-server: 1 start" in serial.output
    parallel = run_pytest(project, {}, "-q", "-n", "2", python=python)
    assert parallel.returncode == 0, parallel.output
    assert "5 passed" in parallel.output and "hermes-server: 2 starts" in parallel.output
    assert not list(project.rglob("conftest.py"))
    # The wheel ships the PEP 561 marker, so a connector's mypy or pyright sees the kit's types.
    where = subprocess.run([python, "-c", "import hermes_server.testkit as kit; print(kit.__file__)"],
                           capture_output=True, text=True, timeout=60, check=True, env=inner_env(tmp_path))
    assert (Path(where.stdout.strip()).parent / "py.typed").is_file()
    assert serial.leftovers() == [] and parallel.leftovers() == []
    print(f"\nscratch project: venv + install {installed:.1f} s, pytest {serial.seconds:.1f} s, "
          f"pytest -n 2 {parallel.seconds:.1f} s")
