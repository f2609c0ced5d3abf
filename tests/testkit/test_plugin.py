"""The pytest plugin, run as a connector's suite runs it: pytest in a subprocess on generated files,
the plugin loaded by its entry point (no conftest), a real server per run."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.testkit.support import inner_env, pid_gone, run_pytest, wait_gone, write_files

pytestmark = pytest.mark.slow

# Every generated test file records the server it saw: pid, port, home.
RECORD = '''
import json, os
def record(server):
    with open(os.path.join(os.path.dirname(__file__), "servers.jsonl"), "a") as out:
        out.write(json.dumps({"pid": server.pid, "port": server.port, "home": str(server.home)}) + "\\n")
'''


def servers(root: Path) -> list[dict]:
    path = root / "servers.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def assert_clean(root: Path, run) -> None:
    """No server process and no server directory outlives the run."""
    seen = servers(root)
    assert seen, run.output
    assert [s["pid"] for s in seen if not pid_gone(s["pid"])] == []
    assert [s["home"] for s in seen if Path(s["home"]).exists()] == []
    assert run.leftovers() == []


def startup_figures(output: str) -> list[float]:
    line = re.search(r"hermes-server: \d+ starts?, start-up to first answer ([\d.]+)(?:-([\d.]+))? s", output)
    assert line, output
    return [float(x) for x in line.groups() if x]


ISOLATION = RECORD + '''
import pytest

pytestmark = pytest.mark.hermes_fixture({"sessions": [{"id": "module-row"}]})

def test_writes(hermes):
    record(hermes)
    assert hermes.http.post("/api/sessions", json={"id": "written"}).status_code == 201
    assert hermes.http.get("/api/sessions/written").status_code == 200

def test_does_not_see_the_other_tests_row(hermes):
    record(hermes)
    assert hermes.http.get("/api/sessions/written").status_code == 404
    assert hermes.http.get("/api/sessions/module-row").status_code == 200
    assert [r.seq for r in hermes.control.requests()] == [1, 2]  # the journal was emptied too

@pytest.mark.hermes_fixture("data/case.json")
@pytest.mark.hermes_fixture({"sessions": [{"id": "child", "parent": "case-1", "relation": "fork"}]})
def test_file_then_dict_markers(hermes):
    assert hermes.http.get("/api/sessions/case-1").json()["session"]["title"] == "Case 1"
    assert hermes.http.get("/api/sessions/child").json()["session"]["parent_session_id"] == "case-1"

@pytest.mark.hermes_faults([{"route": "session_get", "kind": "status", "status": 503, "times": 1}])
def test_faults_marker(hermes):
    assert hermes.http.get("/api/sessions/module-row").status_code == 503
    assert hermes.http.get("/api/sessions/module-row").status_code == 200
    assert [f.fired for f in hermes.control.faults.list()] == [1]

def test_faults_are_gone_after_reset(hermes):
    assert hermes.control.faults.list() == []
    assert hermes.http.get("/api/sessions/module-row").status_code == 200

@pytest.mark.hermes_fixture({"sessions": [{"id": "via-marker"}]})
def test_a_marker_brings_the_reset_fixture(hermes_server):
    assert hermes_server.http.get("/api/sessions/via-marker").status_code == 200

def test_the_session_fixture_alone(hermes_server):
    assert hermes_server.headers == {"Authorization": f"Bearer {hermes_server.api_key}"}
    assert len(hermes_server.api_key) >= 16 and hermes_server.base_url.startswith("http://127.0.0.1:")
    assert (hermes_server.home / "state.db").exists()

def test_without_the_server():
    pass
'''

CASE = {"sessions": [{"id": "case-1", "title": "Case 1", "messages": [{"role": "user", "content": "hi"}]}]}


def test_reset_isolation_markers_and_cleanup(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_iso.py": ISOLATION, "data/case.json": json.dumps(CASE)}, "-q")
    assert run.returncode == 0, run.output
    assert "8 passed" in run.output
    assert len({s["pid"] for s in servers(tmp_path)}) == 1  # one server for the whole session
    figures = startup_figures(run.output)
    # The target is under 1 s on a quiet machine; the bound leaves room for a loaded CI box.
    assert max(figures) < 3.0, run.output
    print(f"\nplugin start-up to first answer: {figures[0]:.2f} s; whole inner run {run.seconds:.1f} s")
    assert_clean(tmp_path, run)


FAILING = RECORD + '''
import pytest

def test_fails(hermes):
    record(hermes)
    hermes.http.post("/api/sessions", json={"id": "the-failing-one"})
    assert False, "on purpose"

@pytest.mark.hermes_fixture("missing.json")
def test_missing_fixture_file(hermes):
    pass

@pytest.mark.hermes_fixture({"sessions": [{"id": "x", "bogus": 1}]})
def test_rejected_fixture(hermes):
    pass

@pytest.mark.hermes_faults([{"kind": "nonsense"}])
def test_rejected_fault(hermes):
    pass
'''


def test_a_failing_test_gets_the_server_log_and_journal(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_fail.py": FAILING}, "-q")
    assert run.returncode == 1, run.output
    assert "hermes-server log (call)" in run.output
    assert re.search(r"POST /api/sessions 201 .*session=", run.output), run.output  # the access line
    assert "hermes-server requests" in run.output and "#1 POST /api/sessions -> 201" in run.output
    assert "missing.json does not exist" in run.output
    assert re.search(r"hermes_fixture: the fixture object was not loaded: 400 invalid_fixture: .*bogus", run.output)
    assert "@pytest.mark.hermes_faults: refused: 400 invalid_fault" in run.output
    assert "1 failed" in run.output and "3 errors" in run.output
    assert_clean(tmp_path, run)


CRASH = RECORD + '''
import os, signal, time

def test_kills_the_server(hermes):
    record(hermes)
    hermes.http.post("/api/sessions", json={"id": "before-the-crash"})
    os.kill(hermes.pid, signal.SIGKILL)
    while hermes.alive:
        time.sleep(0.01)
    hermes.http.get("/api/sessions")

def test_next_test_gets_a_fresh_server(hermes):
    record(hermes)
    assert hermes.http.get("/api/sessions/before-the-crash").status_code == 404
    assert hermes.http.post("/api/sessions", json={"id": "after"}).status_code == 201
'''


def test_a_crashed_server_is_reported_and_restarted(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_crash.py": CRASH}, "-q")
    assert run.returncode == 1, run.output
    assert "1 failed, 1 passed" in run.output
    assert "hermes-server was killed by SIGKILL during this test (call)" in run.output
    assert ("hermes-server was killed by SIGKILL during test_crash.py::test_kills_the_server (call); "
            "restarted over an empty home for test_crash.py::test_next_test_gets_a_fresh_server") in run.output
    assert "HermesServerWarning" in run.output
    first, second = servers(tmp_path)
    assert first["pid"] != second["pid"] and first["port"] == second["port"]  # base_url stays valid
    assert len(startup_figures(run.output)) == 2
    assert_clean(tmp_path, run)


def test_without_restarts_every_later_test_fails_saying_why(tmp_path: Path) -> None:
    files = {"test_crash.py": CRASH, "pytest.ini": "[pytest]\nhermes_restart = false\n"}
    run = run_pytest(tmp_path, files, "-q")
    assert run.returncode == 1, run.output
    assert "1 failed, 1 error" in run.output
    assert ("hermes-server was killed by SIGKILL during test_crash.py::test_kills_the_server (call); "
            "not restarted (hermes_restart = false)") in run.output
    assert_clean(tmp_path, run)


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_x.py": "def test_x(hermes):\n    pass\n"}, "-q",
                     "--hermes-serve-args=--agent openai")
    assert run.returncode == 1, run.output
    assert "hermes-server exited with code 2 during start-up" in run.output
    assert "agent-base-url" in run.output  # the server's own reason
    assert run.leftovers() == []


OPTIONS = '''
def test_settings(hermes):
    clock = hermes.control.clock.get()
    assert clock.deterministic and clock.now == 1893456000.0
    assert hermes.http.get("/v1/models").json()["data"][0]["id"] == "from-ini"
    assert hermes.http.post("/api/sessions", json={"id": "s"}).status_code == 201
    assert hermes.http.post("/api/sessions/s/chat", json={"message": "hi"}).json()["message"]["content"] == (
        "ECHO-REPLY to: hi [n=1]")
'''


def test_options_override_ini(tmp_path: Path) -> None:
    ini = "[pytest]\nhermes_deterministic = false\nhermes_serve_args = --model-name from-ini\nhermes_agent = echo\n"
    run = run_pytest(tmp_path, {"test_opts.py": OPTIONS, "pytest.ini": ini}, "-q", "--hermes-deterministic")
    assert run.returncode == 0, run.output
    without = run_pytest(tmp_path, {}, "-q")
    assert without.returncode == 1 and "assert (False" in without.output, without.output


XDIST = RECORD + "".join(f'''
def test_{i}(hermes):
    record(hermes)
    assert hermes.http.get("/api/sessions").json()["data"] == []
    assert hermes.http.post("/api/sessions", json={{"id": "row-{i}"}}).status_code == 201
''' for i in range(8))


def test_xdist_gives_each_worker_its_own_server(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_par.py": XDIST}, "-q", "-n", "2")
    assert run.returncode == 0, run.output
    assert "8 passed" in run.output
    seen = servers(tmp_path)
    assert len(seen) == 8 and len({s["pid"] for s in seen}) == 2 and len({s["port"] for s in seen}) == 2
    assert "hermes-server: 2 starts" in run.output
    assert_clean(tmp_path, run)


INTERRUPTED = RECORD + '''
def test_interrupted(hermes):
    record(hermes)
    raise KeyboardInterrupt

def test_never_runs(hermes):
    pass
'''


def test_an_interrupted_run_leaves_nothing_behind(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_int.py": INTERRUPTED}, "-q")
    assert run.returncode == 2, run.output
    assert_clean(tmp_path, run)


HANGS = RECORD + '''
import time
def test_hangs(hermes):
    record(hermes)
    time.sleep(60)
'''


def test_a_killed_runner_takes_its_server_along_and_the_next_run_sweeps_its_directory(tmp_path: Path) -> None:
    write_files(tmp_path, {"test_hang.py": HANGS})
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    runner = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"], cwd=tmp_path,
                              env=inner_env(tmpdir, checkout=True), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not servers(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        (server,) = servers(tmp_path)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
    assert wait_gone(server["pid"]), "the server outlived its runner"
    assert Path(server["home"]).parent.exists()  # a SIGKILLed runner cannot clean up its directory...
    (tmp_path / "test_hang.py").unlink()
    run = run_pytest(tmp_path, {"test_ok.py": RECORD + "def test_ok(hermes):\n    record(hermes)\n"}, "-q")
    assert run.returncode == 0, run.output
    left = Path(server["home"]).parent
    assert not left.exists(), (run.output, [(p.name, p.read_text()) for p in left.glob("*.pid")])  # ...the next run removes it
    assert_clean(tmp_path, run)


def test_a_suite_that_never_asks_starts_nothing(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_plain.py": "import pytest\n\n@pytest.mark.parametrize('x', [1, 2])\n"
                                                 "def test_plain(x):\n    assert x\n"}, "-q")
    assert run.returncode == 0, run.output
    assert "hermes-server" not in run.output
    assert run.leftovers() == []


def test_the_readme_example_passes(tmp_path: Path) -> None:
    section = (Path(__file__).resolve().parents[2] / "README.md").read_text().split("## Use it from pytest", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    run = run_pytest(tmp_path, {"test_readme.py": example}, "-q")
    assert run.returncode == 0 and "1 passed" in run.output, run.output


OPTIONS_FIXTURE = RECORD + '''
import pytest
from hermes_server.testkit import Fault, HermesOptions


@pytest.fixture(scope="session")
def hermes_options():
    return HermesOptions(deterministic=True, flags=("--model-name", "from-conftest"))


@pytest.mark.hermes_faults(Fault.status("session_get", 503, times=1))
def test_the_overridden_options_and_a_typed_fault(hermes):
    record(hermes)
    assert hermes.control.clock.get().deterministic
    assert hermes.http.get("/v1/models").json()["data"][0]["id"] == "from-conftest"
    assert hermes.http.get("/api/sessions/x").status_code == 503


def test_make_hermes_gives_one_more_server_per_option_set(hermes, make_hermes):
    quirks = make_hermes(upstream_quirks=True)
    record(quirks)
    assert quirks.pid != hermes.pid and make_hermes(upstream_quirks=True).pid == quirks.pid
    assert "--upstream-quirks" in quirks.options.serve_args() and quirks.options.deterministic
    quirks.http.post("/api/sessions", json={"id": "kept"})
    assert make_hermes(upstream_quirks=True).http.get("/api/sessions/kept").status_code == 404  # reset
'''


def test_options_fixture_and_server_factory(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_factory.py": OPTIONS_FIXTURE}, "-q")
    assert run.returncode == 0, run.output
    assert "2 passed" in run.output and "hermes-server: 2 starts" in run.output
    assert_clean(tmp_path, run)
