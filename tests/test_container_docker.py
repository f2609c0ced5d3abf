"""The image and the compose example where a Docker daemon answers (`make test-container`); skipped, with the reason, elsewhere.

Builds the Dockerfile, starts the image, waits for Docker to call it healthy (its own
HEALTHCHECK), runs examples/compose/lifecycle_check.py against it, then `docker stop`s it
and checks it ended by itself (exit 0, well inside stop's 10 s) with nothing logged as an error,
and that the files it writes in /data carry user and group `hermes`.
Then runs the compose example as README says, with each Compose the machine has (the
`docker compose` plugin, Debian's `docker-compose` v1), on the same base: up, healthy,
answering on the host, and down with nothing left behind.

The base image is the Dockerfile's own (python:3.11-slim-bookworm) when the daemon has it
or can pull it; else HERMES_CONTAINER_BASE, else hermes-server-base:bookworm made by
tools/make_base_image.sh from Debian's packages (docs/container.md). Containers use the
host's network on a free loopback port, so the test needs no bridge or port publishing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import free_port

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_DIR = ROOT / "examples" / "compose"
IMAGE = "hermes-server:test"
DEFAULT_BASE = re.search(r"^ARG BASE=(\S+)", (ROOT / "Dockerfile").read_text(), re.M).group(1)
LOCAL_BASE = "hermes-server-base:bookworm"
KEY = "container-test-key-0123456789abcdef"
# Seconds `docker stop` waits before SIGKILL (its default), and the longest a clean stop of an idle server may take.
STOP_TIMEOUT = 10
CLEAN_STOP_SECONDS = 5


def docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def _daemon_problem() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client on PATH (apt-get install docker.io)"
    try:
        info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=20)
    except subprocess.TimeoutExpired:
        return "the Docker daemon did not answer `docker info` within 20 s"
    if info.returncode != 0:
        return f"no reachable Docker daemon: {(info.stderr.strip().splitlines() or ['docker info failed'])[-1]}"
    return None


def _has_image(name: str) -> bool:
    return docker("image", "inspect", name, check=False).returncode == 0


def _base() -> str:
    """The base image to build on, or pytest.skip saying how to make one."""
    wanted = os.environ.get("HERMES_CONTAINER_BASE")
    if wanted:
        if not _has_image(wanted):
            pytest.skip(f"HERMES_CONTAINER_BASE={wanted} is not an image the daemon has")
        return wanted
    if _has_image(DEFAULT_BASE):
        return DEFAULT_BASE
    if _has_image(LOCAL_BASE):
        return LOCAL_BASE
    try:
        pulled = docker("pull", DEFAULT_BASE, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pulled = None
    if pulled is not None and pulled.returncode == 0:
        return DEFAULT_BASE
    pytest.skip(f"{DEFAULT_BASE} cannot be pulled (no image registry?) and {LOCAL_BASE} is not built: "
                "make it, as root, with `tools/make_base_image.sh` (docs/container.md)")


@pytest.fixture(scope="module")
def base() -> str:
    """The base image both the image test and the compose example build on (skips without a daemon)."""
    problem = _daemon_problem()
    if problem:
        pytest.skip(problem)
    return _base()


@pytest.fixture(scope="module")
def image(base: str) -> str:
    docker("build", "--network", "host", "--build-arg", f"BASE={base}", "-t", IMAGE, str(ROOT), timeout=1200)
    return IMAGE


@pytest.fixture
def container(image: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    name = f"hermes-server-test-{os.getpid()}-{port}"
    docker("run", "-d", "--name", name, "--network", "host",
           "-e", "API_SERVER_HOST=127.0.0.1", "-e", f"API_SERVER_PORT={port}", "-e", f"API_SERVER_KEY={KEY}",
           "--health-interval", "1s", "--health-start-period", "30s", image)
    try:
        yield name, port
    finally:
        docker("rm", "-f", "-v", name, check=False)


def _state(name: str) -> dict:
    return json.loads(docker("inspect", "--format", "{{json .State}}", name).stdout)


def _wait_healthy(name: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while True:
        state = _state(name)
        health = (state.get("Health") or {}).get("Status")
        if health == "healthy":
            return
        assert state["Running"], f"the container exited {state['ExitCode']}:\n{docker('logs', name).stderr}"
        assert time.monotonic() < deadline, f"not healthy after {limit} s ({health}):\n{docker('logs', name).stderr}"
        time.sleep(0.5)


def test_the_image_gets_healthy_passes_the_lifecycle_and_stops_cleanly(container: tuple[str, int]) -> None:
    name, port = container
    _wait_healthy(name)
    check = subprocess.run([sys.executable, str(ROOT / "examples" / "compose" / "lifecycle_check.py")],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "HERMES_URL": f"http://127.0.0.1:{port}", "API_SERVER_KEY": KEY})
    assert check.returncode == 0, check.stdout + check.stderr
    assert "lifecycle check passed" in check.stdout
    started = time.monotonic()
    docker("stop", "-t", str(STOP_TIMEOUT), name, timeout=STOP_TIMEOUT + 30)
    took = time.monotonic() - started
    state = _state(name)
    assert (state["ExitCode"], state["OOMKilled"]) == (0, False)
    assert took < CLEAN_STOP_SECONDS, f"docker stop took {took:.1f} s: was it killed?"
    logs = docker("logs", name)
    text = logs.stdout + logs.stderr
    assert "Traceback" not in text and not re.search(r"\b(ERROR|CRITICAL)\b", text), text
    assert "Application shutdown complete" in text


def test_files_written_in_data_carry_a_named_group(image: str) -> None:
    """What the server writes in /data belongs to user and group `hermes` (tests/test_container.py checks
    the Dockerfile's lines; this, the image they build)."""
    probe = "id -un; id -gn; touch /data/probe; stat -c %U:%G /data /data/probe"
    out = docker("run", "--rm", "--entrypoint", "sh", image, "-c", probe, timeout=120).stdout.split()
    assert out == ["hermes", "hermes", "hermes:hermes", "hermes:hermes"], out


def test_a_home_that_cannot_hold_state_db_keeps_the_container_unhealthy(image: str) -> None:
    port = free_port()
    name = f"hermes-server-test-{os.getpid()}-{port}"
    # HERMES_HOME below a file: state.db can never be opened there.
    docker("run", "-d", "--name", name, "--network", "host", "-e", "HERMES_HOME=/etc/hostname/home",
           "-e", "API_SERVER_HOST=127.0.0.1", "-e", f"API_SERVER_PORT={port}", "-e", f"API_SERVER_KEY={KEY}",
           "--health-interval", "1s", "--health-retries", "2", "--health-start-period", "1s", image)
    try:
        deadline = time.monotonic() + 60
        while (_state(name).get("Health") or {}).get("Status") != "unhealthy":
            assert _state(name)["Running"] and time.monotonic() < deadline, docker("logs", name).stderr
            time.sleep(0.5)
        health = _state(name)["Health"]["Log"][-1]["Output"]
        assert "not ready: state_db degraded (NotADirectoryError)" in health
        assert docker("logs", name).stderr.count("state.db cannot be opened at /etc/hostname/home/state.db") == 1
    finally:
        docker("rm", "-f", "-v", name, check=False)


def _composes() -> list[Any]:
    """Each Compose on this machine as a parameter (the plugin, v2; the standalone command,
    Debian's v1), or one skipped parameter saying what to install."""
    found = []
    if shutil.which("docker") is not None:
        try:
            plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=20).returncode == 0
        except subprocess.TimeoutExpired:
            plugin = False
        if plugin:
            found.append(pytest.param(("docker", "compose"), id="docker_compose"))
    if shutil.which("docker-compose") is not None:
        found.append(pytest.param(("docker-compose",), id="docker-compose"))
    return found or [pytest.param((), id="no-compose", marks=pytest.mark.skip(
        reason="neither `docker compose` nor `docker-compose` on PATH (apt-get install docker-compose)"))]


def _bridge_problem() -> str | None:
    """Why the daemon cannot make the network compose gives a project (a daemon without bridges), or None."""
    probe = f"hermes-compose-probe-{os.getpid()}"
    made = docker("network", "create", probe, check=False)
    if made.returncode != 0:
        return f"the daemon cannot create a bridge network, which compose needs: {made.stderr.strip()}"
    docker("network", "rm", probe, check=False)
    return None


def _layers(name: str) -> list[str]:
    return json.loads(docker("image", "inspect", "--format", "{{json .RootFS.Layers}}", name).stdout)


@pytest.mark.parametrize("compose", _composes())
def test_the_compose_example_runs_offline_on_the_local_base_and_comes_down(base: str,
                                                                           compose: tuple[str, ...]) -> None:
    problem = _bridge_problem()
    if problem:
        pytest.skip(problem)
    project, port = f"hermes-compose-test-{os.getpid()}", free_port()
    env = {**os.environ, "BASE": base, "HERMES_PORT": str(port), "API_SERVER_KEY": KEY}

    def run(*args: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run([*compose, "-p", project, *args], cwd=COMPOSE_DIR, env=env, capture_output=True,
                              text=True, timeout=timeout)

    try:
        # README's command: build, wait for the fixture to be healthy, run the client, stop both.
        up = run("up", "--build", "--abort-on-container-exit", "--exit-code-from", "lifecycle-check", timeout=1200)
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        assert "lifecycle check passed" in up.stdout + up.stderr
        # BASE reached both services: the server is built on it, the client runs it.
        assert _layers("hermes-server:local")[:len(_layers(base))] == _layers(base)
        client = run("ps", "-a", "-q", "lifecycle-check", timeout=60).stdout.strip()
        assert docker("inspect", "--format", "{{.Config.Image}}", client).stdout.strip() == base
        # The fixture alone, as a suite on the host uses it: healthy, and answering on HERMES_PORT.
        started = run("up", "-d", "hermes", timeout=120)
        assert started.returncode == 0, started.stdout + started.stderr
        _wait_healthy(run("ps", "-q", "hermes", timeout=60).stdout.strip())
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/sessions",
                                         headers={"Authorization": f"Bearer {KEY}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            # The key of the environment is the fixture's; the check deleted every session it made.
            assert answer.status == 200 and json.loads(answer.read())["data"] == []
    finally:
        down = run("down", "-v", "--remove-orphans", timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    label = f"label=com.docker.compose.project={project}"
    assert docker("ps", "-aq", "--filter", label).stdout.split() == []
    assert docker("volume", "ls", "-q", "--filter", label).stdout.split() == []
