"""The image and the compose examples where a Docker daemon answers (`make test-container`); skipped, with the reason, elsewhere.

Builds the Dockerfile once, starts the image, waits for Docker to call it healthy (its own
HEALTHCHECK), runs examples/compose/lifecycle_check.py against it, then `docker stop`s it
and checks it ended by itself (exit 0, well inside stop's 10 s) with nothing logged as an error.
Then upstream's container contract, as compose files written for the official image use it:
`gateway run`, a seeded home at /opt/data with its key in .env, HERMES_UID/HERMES_GID on a host
folder of another owner (the server runs as that uid), --user, a /data volume of earlier images,
a home the server cannot enter, and the curl and wget health-check lines people wrote.
Then runs each compose example with each Compose the machine has (the `docker compose` plugin,
Debian's `docker-compose` v1), on the same base: up, healthy, answering, and down with nothing
left behind.

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
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import free_port

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_DIR = ROOT / "examples" / "compose"
# A tag of this run's own: another run on the same daemon (a second checkout's suite) builds its own.
IMAGE = f"hermes-server:test-{os.getpid()}"
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
def image(base: str) -> Iterator[str]:
    """The image, built once for every test of the module (from the wheelhouse when `make wheelhouse` filled it)."""
    docker("build", "--network", "host", "--build-arg", f"BASE={base}", "-t", IMAGE, str(ROOT), timeout=1200)
    yield IMAGE
    docker("image", "rm", "--no-prune", IMAGE, check=False)  # its build steps stay, as the next build's cache


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


def _run(image: str, *args: str, env: dict[str, str] | None = None, mounts: tuple[str, ...] = (),
         docker_args: tuple[str, ...] = ()) -> tuple[str, int]:
    """Start the image (detached, host network, a free loopback port, a 1 s health interval); its name and port.
    The caller removes it (`_removed`)."""
    port = free_port()
    name = f"hermes-server-test-{os.getpid()}-{port}"
    settings = {"API_SERVER_HOST": "127.0.0.1", "API_SERVER_PORT": str(port), **(env or {})}
    environment = [arg for k, v in settings.items() for arg in ("-e", f"{k}={v}")]
    volumes = [arg for mount in mounts for arg in ("-v", mount)]
    docker("run", "-d", "--name", name, "--network", "host", *environment, *volumes, "--health-interval", "1s",
           "--health-start-period", "30s", *docker_args, image, *args)
    return name, port


def _removed(*names: str) -> None:
    for name in names:
        docker("rm", "-f", "-v", name, check=False)


def _get(port: int, path: str, key: str | None) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                     headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, None


def _server_uid(name: str) -> tuple[str, str]:
    """The real uid and gid of the container's main process (the server), from /proc/1/status."""
    status = docker("exec", name, "cat", "/proc/1/status").stdout
    uid = re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)
    gid = re.search(r"^Gid:\s+(\d+)", status, re.M).group(1)
    return uid, gid


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


def test_files_written_in_the_home_carry_a_named_user_and_group(image: str) -> None:
    """A command started as root (the image's default) runs as user and group `hermes`, and what it
    writes in /opt/data is theirs (tests/test_container.py checks the Dockerfile's lines; this, the image)."""
    probe = "id -un; id -gn; touch /opt/data/probe; stat -c %U:%G /opt/data /opt/data/probe"
    out = docker("run", "--rm", image, "sh", "-c", probe, timeout=120).stdout.split()
    assert out == ["hermes", "hermes", "hermes:hermes", "hermes:hermes"], out


def test_a_home_that_cannot_hold_state_db_keeps_the_container_unhealthy(image: str) -> None:
    # HERMES_HOME below a file: state.db can never be opened there.
    name, _ = _run(image, env={"HERMES_HOME": "/etc/hostname/home", "API_SERVER_KEY": KEY},
                   docker_args=("--health-retries", "2", "--health-start-period", "1s"))
    try:
        health = _wait_unhealthy(name)
        assert "not ready: state_db degraded (NotADirectoryError)" in health
        assert docker("logs", name).stderr.count("state.db cannot be opened at /etc/hostname/home/state.db") == 1
    finally:
        _removed(name)


def _wait_unhealthy(name: str) -> str:
    """Wait for Docker to call the container unhealthy (it must keep running); its last health output."""
    deadline = time.monotonic() + 60
    while (_state(name).get("Health") or {}).get("Status") != "unhealthy":
        assert _state(name)["Running"] and time.monotonic() < deadline, docker("logs", name).stderr
        time.sleep(0.5)
    return _state(name)["Health"]["Log"][-1]["Output"]


def test_gateway_run_with_a_key_in_the_environment_serves(image: str) -> None:
    """`docker run IMAGE gateway run -e API_SERVER_KEY=…`, as upstream's docs start it."""
    name, port = _run(image, "gateway", "run", env={"API_SERVER_KEY": KEY})
    try:
        _wait_healthy(name)
        status, listed = _get(port, "/api/sessions", KEY)
        assert status == 200 and listed["data"] == []
        assert _get(port, "/api/sessions", "another-key-0123456789abcdef")[0] == 401
        assert _server_uid(name) == ("10000", "10000")
    finally:
        _removed(name)


def _seeded_home(tmp_path: Path, owner: int | None = None) -> Path:
    """A host folder holding what a Hermes home has: state.db with two sessions, and .env with the key."""
    home = tmp_path / "home"
    home.mkdir()
    fixture = tmp_path / "seed.json"
    fixture.write_text(json.dumps({"sessions": [{"id": "seeded-1", "title": "One"}, {"id": "seeded-2"}]}))
    seeded = subprocess.run([sys.executable, "-m", "hermes_server", "seed", str(fixture), "--home", str(home)],
                            capture_output=True, text=True, timeout=60)
    assert seeded.returncode == 0, seeded.stderr
    (home / ".env").write_text(f"# the home's settings\nAPI_SERVER_KEY={KEY}\n")
    if owner is not None:
        for path in (home, *home.iterdir()):
            os.chown(path, owner, owner)
        home.chmod(0o700)
    return home


def test_a_seeded_home_at_opt_data_serves_its_rows_with_the_key_of_its_env(image: str, tmp_path: Path) -> None:
    home = _seeded_home(tmp_path)
    name, port = _run(image, "gateway", "run", mounts=(f"{home}:/opt/data",))
    try:
        _wait_healthy(name)  # the image's own check found the key in /opt/data/.env too
        status, listed = _get(port, "/api/sessions", KEY)
        assert status == 200 and sorted(row["id"] for row in listed["data"]) == ["seeded-1", "seeded-2"]
        assert _get(port, "/api/sessions", None)[0] == 401
        logs = docker("logs", name)
        said = logs.stdout + logs.stderr
        assert KEY not in said and "generated API key" not in said
        assert "settings read from /opt/data/.env, over the environment's: API_SERVER_KEY" in said
    finally:
        _removed(name)


def test_a_host_folder_of_another_owner_is_written_as_that_uid(image: str, tmp_path: Path) -> None:
    """A folder owned by uid 1234 (mode 700, as a mounted ~/.hermes): with HERMES_UID=1234 HERMES_GID=1234
    the server runs as 1234 and writes there; nothing in it is re-owned."""
    home = _seeded_home(tmp_path, owner=1234)
    name, port = _run(image, "gateway", "run", env={"HERMES_UID": "1234", "HERMES_GID": "1234"},
                      mounts=(f"{home}:/opt/data",))
    try:
        _wait_healthy(name)
        assert _server_uid(name) == ("1234", "1234")
        top = docker("top", name, "-o", "pid,uid,args").stdout.splitlines()
        assert any(line.split()[1] == "1234" and "hermes-server gateway run" in line for line in top[1:]), top
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/sessions", data=b'{"id": "written"}',
                                         headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as created:
            assert created.status == 201
        assert {path.stat().st_uid for path in (home, *home.iterdir())} == {1234}
        assert "gave uid" not in docker("logs", name).stderr  # already theirs: nothing re-owned
    finally:
        _removed(name)
    with sqlite3.connect(home / "state.db") as db:
        assert ("written",) in db.execute("SELECT id FROM sessions").fetchall()


def test_a_home_the_server_cannot_enter_is_unhealthy_then_fine_with_its_owners_uid(image: str, tmp_path: Path) -> None:
    """Started with --user (nothing re-owned, as asked), a home of mode 700 owned by another uid is said
    and reported unhealthy, no traceback; with its owner's uid (here as PUID/PGID) the same folder just works."""
    home = _seeded_home(tmp_path, owner=4321)
    name, _ = _run(image, "gateway", "run", env={"API_SERVER_KEY": KEY}, mounts=(f"{home}:/opt/data",),
                   docker_args=("--user", "2345:2345", "--health-retries", "2", "--health-start-period", "1s"))
    try:
        health = _wait_unhealthy(name)
        assert "not ready: state_db degraded (PermissionError)" in health
        logs = docker("logs", name).stderr
        assert "Traceback" not in logs and logs.count("state.db cannot be opened at /opt/data/state.db") == 1, logs
    finally:
        _removed(name)
    owned, port = _run(image, "gateway", "run", env={"PUID": "4321", "PGID": "4321"},
                       mounts=(f"{home}:/opt/data",))
    try:
        _wait_healthy(owned)
        assert _get(port, "/api/sessions", KEY)[0] == 200
    finally:
        _removed(owned)


def test_a_container_started_with_user_runs_as_that_user(image: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 2345, 2345)
    name, port = _run(image, "gateway", "run", env={"API_SERVER_KEY": KEY}, mounts=(f"{home}:/opt/data",),
                      docker_args=("--user", "2345:2345"))
    bare, bare_port = _run(image, env={"API_SERVER_KEY": KEY}, docker_args=("--user", "2345:2345"))
    try:
        _wait_healthy(name)
        _wait_healthy(bare)  # no mount: the image's /opt/data takes any uid's state.db
        assert _server_uid(name) == ("2345", "2345") and _get(port, "/api/sessions", KEY)[0] == 200
        assert _get(bare_port, "/api/sessions", KEY)[0] == 200
        assert {path.stat().st_uid for path in home.iterdir()} == {2345}
    finally:
        _removed(name, bare)


def test_a_data_volume_of_earlier_images_is_still_served_and_loses_to_opt_data(image: str, tmp_path: Path) -> None:
    """Today's docs mounted the home at /data: alone, it is served (as /opt/data, so the health check finds
    its generated key); mounted beside /opt/data, /opt/data wins and the log says so."""
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    name, port = _run(image, mounts=(f"{legacy}:/data",))
    try:
        _wait_healthy(name)  # no key anywhere: generated, kept in /data, found there by the health check
        assert (legacy / "hermes-server.key").is_file()
        assert _get(port, "/api/sessions", (legacy / "hermes-server.key").read_text().strip())[0] == 200
        assert "only /data is mounted" in docker("logs", name).stderr
    finally:
        _removed(name)
    home = _seeded_home(tmp_path)
    both, port = _run(image, "gateway", "run", mounts=(f"{legacy}:/data", f"{home}:/opt/data"))
    try:
        _wait_healthy(both)
        status, listed = _get(port, "/api/sessions", KEY)
        assert status == 200 and len(listed["data"]) == 2
        assert "both /opt/data and /data are mounted: serving /opt/data" in docker("logs", both).stderr
    finally:
        _removed(both)


# The lines compose files written for upstream's image use (docs/container.md), on this test's port.
HEALTH_LINES = ["curl -f http://localhost:{port}/health", "curl -fsS http://localhost:{port}/health",
                "curl -sf http://localhost:{port}/health", "wget -q -O- http://localhost:{port}/health"]


def test_the_health_check_lines_people_wrote_report_healthy(image: str) -> None:
    """The lines as one container's health check turn it healthy (Debian's curl and wget are in the image).
    `wget --spider` sends HEAD, which hermes-agent 0.19.0 answers 405 (aiohttp's GET routes, measured):
    it fails against both, and so the line docs/container.md gives instead is `wget -q -O-`."""
    port = free_port()
    name = f"hermes-server-health-{os.getpid()}-{port}"
    lines = [line.format(port=port) for line in HEALTH_LINES]
    docker("run", "-d", "--name", name, "--network", "host", "-e", "API_SERVER_HOST=127.0.0.1",
           "-e", f"API_SERVER_PORT={port}", "-e", f"API_SERVER_KEY={KEY}", "--health-cmd", " && ".join(lines),
           "--health-interval", "1s", "--health-start-period", "30s", image)
    try:
        _wait_healthy(name)
        for line in lines:  # each on its own, as a compose file has it
            assert docker("exec", name, *line.split(), check=False).returncode == 0, line
        spider = docker("exec", name, "wget", "-q", "--spider", f"http://localhost:{port}/health", check=False)
        assert spider.returncode == 8  # the server's 405 to HEAD, as upstream's
    finally:
        _removed(name)


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


def _down_leaving_nothing(run: Callable[..., subprocess.CompletedProcess], project: str) -> None:
    """`down -v`, then no container, volume or network of the project is left."""
    down = run("down", "-v", "--remove-orphans", timeout=120)
    assert down.returncode == 0, down.stdout + down.stderr
    label = f"label=com.docker.compose.project={project}"
    for kind in (("ps", "-aq"), ("volume", "ls", "-q"), ("network", "ls", "-q")):
        assert docker(*kind, "--filter", label).stdout.split() == [], kind


def _layers(name: str) -> list[str]:
    return json.loads(docker("image", "inspect", "--format", "{{json .RootFS.Layers}}", name).stdout)


@pytest.mark.parametrize("compose", _composes())
def test_the_compose_example_runs_offline_on_the_local_base_and_comes_down(base: str, image: str,
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
        _down_leaving_nothing(run, project)


# Each example: its folder, the client service, and what the client prints when everything answered.
EXAMPLES = {
    "upstream-style": (ROOT / "examples" / "upstream-style", "client", "seeded rows read"),
    "two-endpoints": (ROOT / "examples" / "two-endpoints", "smoke", "smoke check passed: hermes-a, hermes-b"),
}


@pytest.mark.parametrize("compose", _composes())
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_each_example_comes_up_healthy_answers_and_comes_down_leaving_nothing(image: str, compose: tuple[str, ...],
                                                                            example: str, tmp_path: Path) -> None:
    """The example as its file says to run it (the image it names is this test's): its Hermes services turn
    healthy (the client waits on service_healthy), the client's check passes, and `down -v` leaves no
    container, network or volume of the project."""
    problem = _bridge_problem()
    if problem:
        pytest.skip(problem)
    source, client, passed = EXAMPLES[example]
    folder = tmp_path / example
    shutil.copytree(source, folder)
    project = f"hermes-example-{os.getpid()}-{example}"
    env = {**os.environ, "HERMES_SERVER_IMAGE": image, "HERMES_A_PORT": str(free_port()),
           "HERMES_B_PORT": str(free_port())}
    if (folder / "data" / "seed.json").is_file():  # the example's first step: the state.db a Hermes home has
        docker("run", "--rm", "-v", f"{folder / 'data'}:/opt/data", image, "seed", "/opt/data/seed.json", timeout=120)

    def run(*args: str, timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run([*compose, "-p", project, *args], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=timeout)

    try:
        up = run("up", "--abort-on-container-exit", "--exit-code-from", client, timeout=600)
        output = up.stdout + up.stderr
        assert up.returncode == 0, output[-4000:]
        assert passed in output
        assert "Traceback" not in output
    finally:
        _down_leaving_nothing(run, project)
