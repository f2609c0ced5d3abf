"""The image itself, where a Docker daemon is reachable (`make test-container`); skipped with the reason elsewhere.

Builds the Dockerfile, starts the image, waits for Docker to call it healthy (its own
HEALTHCHECK), runs examples/compose/lifecycle_check.py against it, then `docker stop`s it
and checks it ended by itself (exit 0, well inside stop's 10 s) with nothing logged as an error.

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
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import free_port

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
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
                "make it with `sudo tools/make_base_image.sh` (docs/container.md)")


@pytest.fixture(scope="module")
def image() -> str:
    problem = _daemon_problem()
    if problem:
        pytest.skip(problem)
    base = _base()
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
