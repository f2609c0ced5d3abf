"""The plugin takes the version profile (option, ini key, marker), reads a dash-led `--hermes-serve-args`
value, and says what went wrong in one message (issues 20 and 22), run as a connector's suite runs it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hermes_server.testkit import HermesOptions, HermesServer
from hermes_server.testkit.cmdline import joined
from tests.testkit.support import run_pytest

pytestmark = pytest.mark.slow

PROFILES = '''
import pytest

def version(server):
    return server.http.get("/health").json()["version"]

def test_the_session_profile(hermes, hermes_options):
    assert version(hermes) == hermes_options.hermes_version == "0.20.4"

@pytest.mark.hermes_version("0.21.2")
def test_a_marked_test_gets_that_release(hermes, hermes_server):
    assert version(hermes) == "0.21.2" and hermes.pid != hermes_server.pid
    assert version(hermes_server) == "0.20.4"  # the session's server is still the session's
    assert hermes.http.post("/api/sessions", json={"id": "kept"}).status_code == 201

@pytest.mark.hermes_version("0.21.2")
@pytest.mark.hermes_fixture({"sessions": [{"id": "seeded"}]})
def test_the_marked_server_is_reset_and_seeded(hermes):
    assert hermes.http.get("/api/sessions/kept").status_code == 404
    assert hermes.http.get("/api/sessions/seeded").status_code == 200

@pytest.mark.hermes_version("0.19.0")
def test_make_hermes_starts_from_the_marked_release(make_hermes):
    quirks = make_hermes(upstream_quirks=True)
    assert version(quirks) == "0.19.0" and quirks.options.hermes_version == "0.19.0"
    assert version(make_hermes(hermes_version="0.21.2")) == "0.21.2"

@pytest.mark.hermes_version("0.19.0")
def test_a_marker_brings_the_hermes_fixture(hermes_server, request):
    assert version(request.getfixturevalue("hermes")) == "0.19.0"

class TestAClassMarker:
    pytestmark = pytest.mark.hermes_version("0.21.2")

    def test_its_tests_get_the_release(self, hermes):
        assert version(hermes) == "0.21.2"

    @pytest.mark.hermes_version("0.20.4")
    def test_the_closest_marker_wins(self, hermes, hermes_server):
        assert version(hermes) == "0.20.4" and hermes.pid == hermes_server.pid

@pytest.mark.hermes_version("0.21.2")
def test_a_failing_marked_test_gets_its_servers_log(hermes):
    hermes.http.get("/api/sessions/only-in-this-log")
    assert False, "on purpose"

@pytest.mark.hermes_version(21)
def test_a_marker_without_a_release(hermes):
    pass

@pytest.mark.hermes_version("9.9")
def test_an_unknown_release(hermes):
    pass
'''


def test_option_ini_key_and_marker_choose_the_release(tmp_path: Path) -> None:
    """Source: issue 20 ("the pytest plugin and the testkit take the profile"); the releases are
    docs/versions.md's profiles."""
    ini = "[pytest]\nhermes_version = 0.21.2\n"
    run = run_pytest(tmp_path, {"test_profiles.py": PROFILES, "pytest.ini": ini}, "-q", "--hermes-version", "0.20.4")
    assert "1 failed, 7 passed, 2 errors" in run.output, run.output
    failed = run.output.split("test_a_failing_marked_test_gets_its_servers_log", 1)[1]
    # Its own server's log (the access line) and journal, not the session server's.
    section = failed.split("short test summary", 1)[0]
    assert re.search(r"GET /api/sessions/\{session_id\} 404 .*session=only-in-this-log", section), section
    assert "#1 GET /api/sessions/only-in-this-log -> 404" in section
    assert ('@pytest.mark.hermes_version takes one release, e.g. @pytest.mark.hermes_version("0.21.2")'
            in run.output)
    assert "--hermes-version must be one of 0.19.0, 0.20.4, 0.21.2, 0.21.6, got '9.9'" in run.output
    assert "hermes-server: 4 starts" in run.output  # 0.20.4, 0.21.2, 0.19.0, 0.19.0 with quirks
    assert run.leftovers() == []


INI_ONLY = '''
def test_ini(hermes, hermes_options):
    assert hermes_options.hermes_version == "0.21.2"
    assert hermes.http.get("/health").json()["version"] == "0.21.2"
'''


def test_the_ini_key_alone(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_ini.py": INI_ONLY, "pytest.ini": "[pytest]\nhermes_version = 0.21.2\n"}, "-q")
    assert run.returncode == 0 and "1 passed" in run.output, run.output


def test_options_and_the_launcher_take_the_release() -> None:
    options = HermesOptions(hermes_version="0.21.2", upstream_quirks=True)
    assert options.serve_args() == ["--hermes-version", "0.21.2", "--upstream-quirks"]
    assert HermesOptions().serve_args() == []  # no flag: the server's default, 0.19.0
    assert HermesServer(options, hermes_version="0.20.4").options.hermes_version == "0.20.4"
    assert HermesServer(hermes_version="0.20.4").options.serve_args() == ["--hermes-version", "0.20.4"]


QUIRKS = '''
def test_quirks_on(hermes):
    assert "upstream quirks ON" in hermes.log_text()
    assert hermes.options.flags == ("--upstream-quirks",)
'''


@pytest.mark.parametrize("how", [
    ("--hermes-serve-args", "--upstream-quirks"),   # the documented form, one flag (failed before)
    ("--hermes-serve-args=--upstream-quirks",),
])
def test_a_serve_args_value_of_one_flag(tmp_path: Path, how: tuple[str, ...]) -> None:
    """Issue 22: `--hermes-serve-args "--upstream-quirks"` ended in pytest's own parser ("expected one argument")."""
    run = run_pytest(tmp_path, {"test_quirks.py": QUIRKS}, "-q", *how)
    assert run.returncode == 0 and "1 passed" in run.output, run.output


def test_a_serve_args_value_of_one_flag_in_addopts(tmp_path: Path) -> None:
    ini = "[pytest]\naddopts = --hermes-serve-args --upstream-quirks\n"
    run = run_pytest(tmp_path, {"test_quirks.py": QUIRKS, "pytest.ini": ini}, "-q")
    assert run.returncode == 0 and "1 passed" in run.output, run.output


def test_joining_leaves_everything_else_alone() -> None:
    option = ("--hermes-serve-args",)
    assert joined(["-q", "--hermes-serve-args", "--a b", "-x"], option) == ["-q", "--hermes-serve-args=--a b", "-x"]
    assert joined(["--hermes-serve-args=--a", "--hermes-serve-args"], option) == [
        "--hermes-serve-args=--a", "--hermes-serve-args"]  # nothing to join: argparse says what is missing
    assert joined(["--", "--hermes-serve-args", "--a"], option) == ["--", "--hermes-serve-args", "--a"]


REFUSED = '''
import pytest

@pytest.mark.hermes_fixture({"sessions": [{"id": "x", "bogus": 1}]})
def test_rejected_fixture(hermes):
    pass

@pytest.mark.hermes_faults([{"kind": "nonsense"}])
def test_rejected_fault(hermes):
    pass
'''


def _setup_errors(output: str) -> list[str]:
    """Each setup error's report, without the short summary after the last one (which repeats a
    message whole under CI=true, where pytest does not cut summary lines to the terminal)."""
    return re.split(r"_+ ERROR at setup of ", output.split("short test summary info")[0])[1:]


def test_a_refused_fixture_is_one_message(tmp_path: Path) -> None:
    """Issue 22: the plugin's fixture error repeated the JSON path and chained a second traceback."""
    run = run_pytest(tmp_path, {"test_refused.py": REFUSED}, "-q")
    assert "2 errors" in run.output, run.output
    fixture, fault = _setup_errors(run.output)
    assert fixture.count("$.sessions[0].bogus") == 1, fixture
    assert "During handling of the above exception" not in run.output
    assert "@pytest.mark.hermes_faults: refused: 400 invalid_fault" in fault
    assert "Traceback" not in run.output and "plugin.py:" not in run.output


def test_a_server_that_cannot_start_is_one_message(tmp_path: Path) -> None:
    files = {"test_x.py": "def test_x(hermes):\n    pass\n", "bad.json": '{"sessions": [{"id": "b", "parent": "zzz"}]}'}
    run = run_pytest(tmp_path, files, "-q", "--hermes-serve-args", "--fixture bad.json")
    (error,) = _setup_errors(run.output)
    assert "hermes-server exited with code 2 during start-up" in error
    assert error.count("unknown parent 'zzz'") == 1, error
    assert "process.py:" not in error and "HermesServerError" not in error  # no launcher traceback
    assert run.leftovers() == []
