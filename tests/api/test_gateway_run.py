"""Upstream's command line and home settings, on real processes: what compose files written for the
official image run (`gateway run`, `-p NAME gateway run --accept-hooks`) serves as `serve` does, and
a key kept only in `$HERMES_HOME/.env` is the key, over the environment's, and never printed.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import clean_env, free_port, wait_until_serving

FILE_KEY = "key-from-dotenv-0123456789abcdef"
SHELL_KEY = "key-from-shell-0123456789abcdef"


class Started:
    """A hermes-server process started with an argv of our choosing, its log beside the home."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        with log.open("wb") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "hermes_server", *argv], stdout=out,
                                            stderr=subprocess.STDOUT, env=env)

    def wait_until_serving(self, url: str) -> None:
        wait_until_serving(self.process, url, self.log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(15)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[Started]]:
    running: list[Started] = []
    yield running
    for server in running:
        server.stop()


def _serve(started: list[Started], tmp_path: Path, argv: list[str], **env: str) -> tuple[Started, str]:
    port = free_port()
    server = Started(argv, clean_env(API_SERVER_PORT=str(port), **env), tmp_path / f"server-{port}.log")
    started.append(server)
    url = f"http://127.0.0.1:{port}"
    server.wait_until_serving(url)
    return server, url


def _sessions(url: str, key: str) -> int:
    return httpx.get(url + "/api/sessions", headers={"Authorization": f"Bearer {key}"}, timeout=10).status_code


@pytest.mark.parametrize("argv", [["gateway", "run"], ["gateway"], ["gateway", "run", "--replace", "--no-supervise"]],
                         ids=["gateway-run", "bare-gateway", "upstream-flags"])
def test_gateway_run_serves_as_serve_does(started: list[Started], tmp_path: Path, argv: list[str]) -> None:
    home = tmp_path / "home"
    server, url = _serve(started, tmp_path, argv, HERMES_HOME=str(home), API_SERVER_KEY=SHELL_KEY)
    assert _sessions(url, SHELL_KEY) == 200
    created = httpx.post(url + "/api/sessions", json={"id": "one"}, headers={"Authorization": f"Bearer {SHELL_KEY}"},
                         timeout=10)
    assert created.status_code == 201
    with sqlite3.connect(home / "state.db") as db:
        assert db.execute("SELECT id FROM sessions").fetchall() == [("one",)]
    ignored = [line for line in server.log().splitlines() if "gateway run: ignoring" in line]
    assert ignored == ([] if len(argv) < 3 else [ignored[0]])
    if ignored:
        assert "--replace, --no-supervise" in ignored[0]


def test_a_profile_is_served_from_its_folder_as_upstream_selects_it(started: list[Started], tmp_path: Path) -> None:
    root = tmp_path / "data"
    (root / "profiles" / "h-01").mkdir(parents=True)
    server, url = _serve(started, tmp_path, ["-p", "H-01", "gateway", "run", "--accept-hooks"], HERMES_HOME=str(root),
                         API_SERVER_KEY=SHELL_KEY)
    assert httpx.post(url + "/api/sessions", json={"id": "p"}, headers={"Authorization": f"Bearer {SHELL_KEY}"},
                      timeout=10).status_code == 201
    assert (root / "profiles" / "h-01" / "state.db").is_file() and not (root / "state.db").exists()
    assert f"over {root / 'profiles' / 'h-01' / 'state.db'}" in server.log()
    assert server.log().count("gateway run: ignoring --accept-hooks") == 1


def _run(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", *argv], capture_output=True, text=True, timeout=60,
                          env=clean_env(**env))


@pytest.mark.parametrize(("argv", "says"), [
    (["gateway", "start"], "`gateway start` manages upstream's gateway service"),
    (["gateway", "status", "--deep"], "`gateway status` manages upstream's gateway service"),
    (["-p", "coder", "gateway", "install", "--force"], "`gateway install` manages"),
    (["-p", "nobody", "gateway", "run"], "profile 'nobody' does not exist: no folder"),
    (["-p", "Bad Name!", "gateway", "run"], "a profile name is 1 to 64 characters"),
    (["-p", "root", "gateway", "run"], "root is a reserved name"),
    (["-p", "coder", "serve"], "-p/--profile goes with `gateway run`"),
])
def test_what_upstream_would_refuse_or_has_no_meaning_here_exits_2_in_one_line(tmp_path: Path, argv: list[str],
                                                                                says: str) -> None:
    done = _run(*argv, HERMES_HOME=str(tmp_path), API_SERVER_KEY=SHELL_KEY)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was started, nothing written


def test_a_key_kept_only_in_the_homes_env_is_the_key_and_is_never_printed(started: list[Started],
                                                                           tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text(f"# written by upstream's setup\nexport API_SERVER_KEY='{FILE_KEY}'\n"
                               "OPENAI_API_KEY=sk-not-ours\n")
    # The shell's key is the stale one: the home's file wins, as in hermes-agent 0.19.0.
    server, url = _serve(started, tmp_path, ["gateway", "run"], HERMES_HOME=str(home), API_SERVER_KEY=SHELL_KEY)
    assert _sessions(url, FILE_KEY) == 200
    assert _sessions(url, SHELL_KEY) == 401
    log = server.log()
    assert FILE_KEY not in log and "sk-not-ours" not in log and "generated API key" not in log
    assert f"settings read from {home / '.env'}, over the environment's: API_SERVER_KEY (and 1 other" in log
    # The image's own check finds the key where the server did, with none in its environment.
    ready = _run("healthcheck", "--ready", HERMES_HOME=str(home), API_SERVER_PORT=url.rsplit(":", 1)[1])
    assert ready.returncode == 0, ready.stderr
    assert FILE_KEY not in ready.stdout + ready.stderr
    # A flag still wins over both.
    _, flagged_url = _serve(started, tmp_path, ["serve", "--api-key", "key-from-flag-0123456789abcdef"],
                                  HERMES_HOME=str(home))
    assert (_sessions(flagged_url, "key-from-flag-0123456789abcdef"), _sessions(flagged_url, FILE_KEY)) == (200, 401)


def test_settings_from_the_env_file_are_refused_as_the_environments_are_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_SERVER_PORT=eighty\n")
    done = _run("gateway", "run", HERMES_HOME=str(tmp_path))
    assert done.returncode == 2
    assert f"API_SERVER_PORT='eighty' (from {tmp_path / '.env'}) must be a whole number" in done.stderr


def test_a_malformed_line_names_the_file_and_line_never_its_text(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"API_SERVER_PORT=8642\n\nAPI_SERVER_KEY='{FILE_KEY}\n")
    for argv, status in ((["gateway", "run"], 2), (["serve"], 2), (["healthcheck", "--ready"], 1)):
        done = _run(*argv, HERMES_HOME=str(tmp_path))
        assert done.returncode == status, done.stderr
        assert f"{tmp_path / '.env'}, line 3: " in done.stderr, done.stderr
        assert FILE_KEY not in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
