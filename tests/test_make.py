"""The Makefile a new user runs first: `make serve PORT=…`, and how the README's bare commands are reached."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on PATH")


def dry_run(*args: str) -> str:
    """What `make -n` would run (nothing is run; the venv stamp is taken as made)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under make test
    done = subprocess.run(["make", "--no-print-directory", "-n", "-o", ".venv/.installed", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=30, check=True, env=env)
    return done.stdout


def test_make_serve_passes_port_and_host_on() -> None:
    assert dry_run("serve").splitlines()[-1].split() == [".venv/bin/hermes-server", "serve"]
    assert dry_run("serve", "PORT=9000", "HOST=0.0.0.0").splitlines()[-1].split() == [
        ".venv/bin/hermes-server", "serve", "--port", "9000", "--host", "0.0.0.0"]


def test_make_serve_says_how_to_run_the_other_commands() -> None:
    assert ".venv/bin/hermes-server COMMAND" in dry_run("serve")
    assert dry_run("cli", "ARGS=seed fixture.json").splitlines()[-1].split() == [
        ".venv/bin/hermes-server", "seed", "fixture.json"]
    readme = (ROOT / "README.md").read_text()
    assert "make serve PORT=9000" in readme and ".venv/bin/hermes-server" in readme and "make cli ARGS=" in readme


def test_make_test_container_runs_the_docker_test() -> None:
    assert "tests/test_container_docker.py" in dry_run("test-container")


def test_make_test_passes_pytest_arguments_on_and_shows_the_slowest() -> None:
    line = dry_run("test", "-o", ".venv-upstream/.installed", "ARGS=-k fork -x").splitlines()[-1]
    assert line.startswith("HERMES_UPSTREAM_VENV=") and line.endswith("--durations=15 -n 2 -k fork -x")
    fast = dry_run("test-fast").splitlines()[-1]
    assert '-m "not slow and not interop and not container"' in fast and "-n 4" in fast


def test_make_test_brings_the_browser_the_inspector_tests_need() -> None:
    steps = dry_run("test", "-o", ".venv-upstream/.installed")
    assert "apt-get install -y -qq chromium" in steps and steps.index("chromium") < steps.index("pytest")
    assert "chromium" not in dry_run("test", "-o", ".venv-upstream/.installed", "BROWSER=0")


def test_the_readme_says_when_make_test_installs_a_browser_and_how_not_to() -> None:
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "apt-get" in readme and "chromium" in readme and "make test BROWSER=0" in readme


def test_ci_lints_then_runs_the_readme_test_command_then_the_floors() -> None:
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    steps = [line for line in lines if line.startswith("make ")]
    assert steps.index("make lint") < steps.index("make test") < steps.index("make test-min")


def test_make_test_min_pins_every_direct_dependency_to_its_floor() -> None:
    steps = dry_run("-B", "test-min")
    assert "tools/lowest_direct.py test yaml > .venv-min/constraints.txt" in steps
    assert "-c .venv-min/constraints.txt -e '.[test,yaml]'" in steps
    fast = steps.splitlines()[-1]
    assert fast.startswith(".venv-min/bin/python -m pytest") and '-m "not slow and not interop and not container"' in fast


def test_make_serve_installs_the_runtime_dependencies_alone() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    steps = subprocess.run(["make", "--no-print-directory", "-n", "-B", "serve"], cwd=ROOT, capture_output=True,
                           text=True, timeout=30, check=True, env=env).stdout
    installs = [line for line in steps.splitlines() if "pip install" in line and "--upgrade pip" not in line]
    assert installs and all("[test]" not in line for line in installs), installs


def test_the_readme_sets_the_key_its_curl_lines_send() -> None:
    from hermes_server.cli.keyfile import KEY_FILE

    readme = (ROOT / "README.md").read_text()
    first_curl = readme.index('curl -s -H "Authorization: Bearer $KEY"')
    setting = readme.rfind("KEY=$(cat .hermes-home/", 0, first_curl)
    assert setting != -1, "no line before the first curl sets $KEY"
    assert readme[setting:].startswith(f"KEY=$(cat .hermes-home/{KEY_FILE})")
    assert "HERMES_HOME ?= $(CURDIR)/.hermes-home" in (ROOT / "Makefile").read_text()


@pytest.mark.parametrize("taken_by", ["PORT", "API_SERVER_PORT"])
def test_make_serve_on_a_taken_port_names_make_serve_port(tmp_path: Path, taken_by: str) -> None:
    """Issue 22: `make serve`'s refusal names its own form, `make serve PORT=…`, not the --port make passes on."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "API_SERVER_KEY")}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        given = [f"PORT={port}"] if taken_by == "PORT" else []
        run = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed-runtime", "serve", *given,
                              f"HERMES_HOME={tmp_path / 'home'}"], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, env={**env, "API_SERVER_PORT": port} if not given else env)
    assert run.returncode != 0 and "serving" not in run.stdout
    refusal = [line for line in run.stderr.splitlines() if line.startswith("hermes-server:")]
    assert refusal == [f"hermes-server: cannot listen on 127.0.0.1:{port}: address already in use by another "
                       "process; stop it, or choose another port with make serve PORT=…"], run.stderr
