"""`hermes-server serve`: options and their environment fallbacks, key policy, --no-auth, help."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import clean_env, free_port

pytestmark = pytest.mark.slow

GOOD_KEY = "cli-key-0123456789abcdef"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_server", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or clean_env())


class Launched:
    """A `hermes-server serve` process started with exactly the given flags and environment."""

    def __init__(self, tmp: Path, args: list[str], env: dict[str, str], port: int) -> None:
        self.log = tmp / f"cli-{port}.log"
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "hermes_server", "serve", *args],
                                         stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"exited {self.proc.returncode}: {self.output()}")
            try:
                if httpx.get(self.url + "/health", timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError(f"did not start: {self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, path: str, key: str | None = None, **kw) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        headers.update(kw.pop("headers", {}))
        return httpx.request(kw.pop("method", "GET"), self.url + path, headers=headers, timeout=10, **kw)

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(15)


@pytest.fixture
def launch(tmp_path: Path) -> Iterator:
    started: list[Launched] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Launched:
        flags, env = list(args), env or clean_env()
        if "--port" in flags:
            port = int(flags[flags.index("--port") + 1])
        elif "API_SERVER_PORT" in env:
            port = int(env["API_SERVER_PORT"])
        else:
            port = free_port()
            flags += ["--port", str(port)]
        if "--home" not in flags and "HERMES_HOME" not in env:
            flags += ["--home", str(tmp_path / "home")]
        server = Launched(tmp_path, flags, env, port)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.proc.poll() is None:
            server.stop()


# -- key policy -----------------------------------------------------------------------


@pytest.mark.parametrize(("key", "why"), [("0123456789abcde", "is 15 characters"), ("changeme", "placeholder")])
def test_weak_keys_are_refused_with_the_reason(tmp_path: Path, key: str, why: str) -> None:
    out = run_cli("serve", "--home", str(tmp_path / "h"), "--port", str(free_port()), "--api-key", key)
    assert out.returncode != 0
    assert "refusing to start" in out.stderr and why in out.stderr
    assert "openssl rand -hex 32" in out.stderr
    assert not (tmp_path / "h").exists()  # nothing created


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("short-key", "is 9 characters"),
        ("   0123456789abcde   ", "is 15 characters"),  # counted after trimming, as upstream
        ("", "is 0 characters"),
        ("CHANGEME", "placeholder"),
        ("your_api_key_here", "placeholder"),  # 17 characters, refused by name
        ("None", "placeholder"),
    ],
)
def test_key_policy(key: str, why: str) -> None:
    """The rule behind the refusal above, for more keys than are worth a process each."""
    from hermes_server.domain.keys import generate_key, key_problem

    assert why in (key_problem(key) or "")
    assert key_problem("0123456789abcdef") is None
    assert key_problem(generate_key()) is None and generate_key() != generate_key()


def test_weak_key_from_the_environment_is_refused(tmp_path: Path) -> None:
    out = run_cli("serve", "--home", str(tmp_path / "h"), "--port", str(free_port()),
                  env=clean_env(API_SERVER_KEY="changeme"))
    assert out.returncode != 0 and "placeholder" in out.stderr


def test_generated_key_is_printed_once_and_works(launch) -> None:
    server = launch()
    found = re.findall(r"generated API key \(send as 'Authorization: Bearer <key>'\): (\S+)", server.output())
    assert len(found) == 1
    key = found[0]
    assert len(key) >= 32
    assert server.output().count(key) == 1
    assert server.get("/api/sessions", key).status_code == 200
    assert server.get("/api/sessions").status_code == 401
    assert server.get("/api/sessions", "hs-not-the-key-0123456789").status_code == 401


def test_given_key_is_not_printed_and_is_trimmed(launch) -> None:
    server = launch("--api-key", f"  {GOOD_KEY}  ")
    assert GOOD_KEY not in server.output() and "generated API key" not in server.output()
    assert server.get("/api/sessions", GOOD_KEY).status_code == 200


# -- environment fallbacks ------------------------------------------------------------------


def test_environment_fallbacks(launch, tmp_path: Path) -> None:
    port = free_port()
    home = tmp_path / "env-home"
    server = launch(env=clean_env(HERMES_HOME=f"  {home}  ", API_SERVER_HOST="127.0.0.1",
                                  API_SERVER_PORT=str(port), API_SERVER_KEY=GOOD_KEY))
    assert server.port == port
    assert server.get("/api/sessions", GOOD_KEY).status_code == 200
    assert server.get("/api/sessions", "x" * 20).status_code == 401
    assert (home / "state.db").is_file()
    assert f"http://127.0.0.1:{port}" in server.output() and str(home / "state.db") in server.output()


def test_flags_beat_the_environment(launch, tmp_path: Path) -> None:
    port = free_port()
    server = launch("--home", str(tmp_path / "flag-home"), "--port", str(port), "--api-key", GOOD_KEY,
                    env=clean_env(HERMES_HOME=str(tmp_path / "env-home"), API_SERVER_PORT=str(free_port()),
                                  API_SERVER_KEY="env-key-0123456789abcdef"))
    assert server.get("/api/sessions", GOOD_KEY).status_code == 200
    assert server.get("/api/sessions", "env-key-0123456789abcdef").status_code == 401
    assert (tmp_path / "flag-home" / "state.db").is_file()
    assert not (tmp_path / "env-home").exists()


# -- --no-auth ----------------------------------------------------------------------------


def test_no_auth_opens_every_route_and_refuses_session_keys(launch) -> None:
    server = launch("--no-auth", env=clean_env(API_SERVER_KEY=GOOD_KEY))  # the flag wins over the env key
    assert "generated API key" not in server.output()
    assert server.get("/api/sessions").status_code == 200
    assert server.get("/api/sessions", "anything-at-all").status_code == 200
    assert server.get("/api/sessions", method="POST", json={"id": "open"}).status_code == 201
    r = server.get("/api/sessions/open/chat", method="POST", json={"message": "hi"},
                   headers={"X-Hermes-Session-Key": "abc"})
    assert r.status_code == 403
    assert r.json()["error"]["message"] == ("X-Hermes-Session-Key requires API key authentication. "
                                            "Configure API_SERVER_KEY to enable this feature.")
    assert "WARNING" not in server.output()  # loopback: no warning


def test_no_auth_from_the_environment(launch) -> None:
    server = launch(env=clean_env(HERMES_SERVER_NO_AUTH="1"))
    assert "generated API key" not in server.output()
    assert server.get("/api/sessions").status_code == 200
    r = server.get("/api/sessions", method="POST", json={"id": "k"}, headers={"X-Hermes-Session-Key": "abc"})
    assert r.status_code == 201  # the session-key header is read by the chat routes only
    r = server.get("/api/sessions/k/chat", method="POST", json={"message": "hi"}, headers={"X-Hermes-Session-Key": "abc"})
    assert r.status_code == 403


NO_BIND = ("import socket, sys, uvicorn, hermes_server.cli.listen as listen; listen.bind = lambda h, p: socket.socket(); "
           "uvicorn.Server.run = lambda self, sockets=None: setattr(self, 'started', True); "
           "from hermes_server.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_no_auth_warns_off_loopback(tmp_path: Path, host: str, warned: bool) -> None:
    """Checked without binding (the bind and uvicorn's run are stubbed), so no test ever listens beyond loopback."""
    out = subprocess.run([sys.executable, "-c", NO_BIND, "serve", "--no-auth", "--host", host,
                          "--home", str(tmp_path / "h")], capture_output=True, text=True, timeout=30, env=clean_env())
    assert out.returncode == 0, out.stderr
    assert ("WARNING: --no-auth on non-loopback address" in out.stderr) is warned


def test_loopback_rule() -> None:
    from hermes_server.cli.serve import _is_loopback

    assert all(_is_loopback(h) for h in ("127.0.0.1", "127.3.4.5", "::1", "localhost"))
    assert not any(_is_loopback(h) for h in ("0.0.0.0", "::", "192.0.2.7", "example.org"))


# -- help ---------------------------------------------------------------------------------


def test_help_explains_every_option() -> None:
    top = run_cli("--help")
    assert top.returncode == 0 and "serve" in top.stdout
    serve = run_cli("serve", "--help")
    assert serve.returncode == 0
    text = " ".join(serve.stdout.split())
    for flag, env in [("--home", "HERMES_HOME"), ("--host", "API_SERVER_HOST"), ("--port", "API_SERVER_PORT"),
                      ("--api-key", "API_SERVER_KEY")]:
        assert flag in text and f"env {env}" in text
    assert "default 127.0.0.1" in text and "default 8642" in text
    from hermes_server.cli.main import build_parser

    parser = build_parser()
    serve_parser = next(a for a in parser._subparsers._group_actions[0].choices.values()  # noqa: SLF001 - argparse has no public API
                        if a.prog.endswith("serve"))
    for action in serve_parser._actions:  # noqa: SLF001
        if action.option_strings and action.dest != "help":
            assert action.help and len(action.help) > 15, action.option_strings
            assert action.option_strings[0] in text


def test_version() -> None:
    out = run_cli("--version")
    assert out.returncode == 0 and "emulates hermes-agent 0.19.0" in out.stdout
