"""Rough edges of `hermes-server serve` a new user hit: option values, the bind, the kept key, JSON start-up lines."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.server import clean_env, free_port, generated_key, serve_without_key, start_server, stop_process

pytestmark = pytest.mark.slow

GOOD_KEY = "cli-key-0123456789abcdef"


def run_serve(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_server", "serve", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or clean_env())


# -- every option row refuses a bad value in one line --------------------------------------------

# A value each row must refuse (flag and environment go through the same parser). A row
# added to the table without a case here fails test_every_row_has_a_bad_value_case.
BAD_VALUES: dict[str, list[str]] = {
    "host": ["http://127.0.0.1", "bad..host", "two words"],
    "port": ["99999", "0", "abc"],
    "model_name": ["two words"],
    "cors_origins": ["localhost:3000", "http://a.example/path"],
    "log_level": ["loud"],
    "log_format": ["xml"],
    "hermes_version": ["0.20", "9.9.9"],
    "shutdown_grace_seconds": ["0", "-1", "inf", "nan", "soon"],
    "turn_drain_seconds": ["0", "forever"],
    "agent": ["gpt"],
    "agent_base_url": ["127.0.0.1:8080/v1", "ftp://x/v1", "http://"],
    "agent_model": ["a model"],
    "agent_api_key": ["a key"],
    "agent_script": ["/nonexistent/script.json", "/"],
    "keepalive_seconds": ["0"],
    "compress_after_messages": ["0", "many"],
    "max_request_line": ["10"],
    "max_header_bytes": ["x"],
    "max_headers": ["0", "many"],
    "max_head_bytes": ["-5"],
    "fixture_path": ["/nonexistent/fixture.json"],
    "herm_run_allowance": ["-1", "some"],
    "agent_delay": ["-1", "inf", "a while"],
    "max_concurrent_runs": ["-1", "ten"],
    "herm_run_window_seconds": ["0", "inf", "a minute"],
    "read_cache_mb": ["-1", "4097", "lots"],
}
# Checked elsewhere or free-form: the home (readiness reports an unusable one), the keys
# (the key policy in test_cli.py and tests/hermrun) and switches (their environment values, below).
NOT_IN_TABLE = {"home", "api_key", "herm_run_key"}


def test_every_row_has_a_bad_value_case() -> None:
    from hermes_server.cli.main import serve_options

    rows = {o.dest for o in serve_options()[0] if not o.switch}
    assert rows - NOT_IN_TABLE == set(BAD_VALUES)


@pytest.mark.parametrize(("dest", "value"), [(d, v) for d, values in BAD_VALUES.items() for v in values])
def test_each_bad_value_is_refused_in_one_line_from_flag_and_environment(dest: str, value: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_server.cli.main import serve_options
    from hermes_server.cli.options import OptionError

    option = next(o for o in serve_options()[0] if o.dest == dest)
    with pytest.raises(OptionError) as flag:
        option.resolve(value)
    assert str(flag.value).startswith(f"{option.flag} ") and "\n" not in str(flag.value)
    monkeypatch.setenv(option.env, value)
    with pytest.raises(OptionError) as env:
        option.resolve(None)
    assert str(env.value).startswith(f"{option.env}=") and "\n" not in str(env.value)


@pytest.mark.parametrize(("dest", "value"), [("host", "::1"), ("host", "localhost"), ("host", "0.0.0.0"),
                                             ("cors_origins", "*"), ("cors_origins", "http://localhost:3000, https://a.b"),
                                             ("agent_base_url", "http://127.0.0.1:8080/v1"),
                                             ("shutdown_grace_seconds", "0.5")])
def test_good_values_pass(dest: str, value: str) -> None:
    from hermes_server.cli.main import serve_options

    next(o for o in serve_options()[0] if o.dest == dest).resolve(value)


def test_a_switch_refuses_an_unknown_environment_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_server.cli.options import SERVE_OPTIONS, OptionError

    switch = next(o for o in SERVE_OPTIONS if o.dest == "no_auth")
    for value, on in [("1", True), ("yes", True), ("0", False), ("off", False)]:
        monkeypatch.setenv(switch.env, value)
        assert switch.resolve(False) is on
    monkeypatch.setenv(switch.env, "maybe")
    with pytest.raises(OptionError, match="HERMES_SERVER_NO_AUTH='maybe' must be one of"):
        switch.resolve(False)


@pytest.mark.parametrize(("args", "env", "says"), [
    (["--port", "99999"], {}, "--port must be at most 65535"),
    ([], {"API_SERVER_PORT": "abc"}, "API_SERVER_PORT='abc' must be a whole number"),
])
def test_the_reported_cases_end_in_one_line_and_no_traceback(tmp_path: Path, args: list[str], env: dict[str, str],
                                                             says: str) -> None:
    out = run_serve("--home", str(tmp_path / "h"), *args, env=clean_env(**env))
    assert out.returncode == 2 and says in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


# -- the bind -----------------------------------------------------------------------------------


def test_a_port_in_use_is_refused_before_serving_is_said(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run_serve("--home", str(tmp_path / "h"), "--port", str(port), "--api-key", GOOD_KEY)
    assert out.returncode == 2
    assert "serving" not in out.stdout + out.stderr and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        f"hermes-server: cannot listen on 127.0.0.1:{port}: address already in use by another process; "
        "stop it, or choose another port with --port (or API_SERVER_PORT)"]
    from hermes_server.testkit.process import _port_taken

    assert _port_taken(out.stderr)  # the test kit still retries on another port


@pytest.mark.parametrize(("host", "says"), [("192.0.2.7", "192.0.2.7 is not an address of this machine"),
                                            ("nosuch.invalid", "not an address of this machine nor a name")])
def test_a_bad_host_is_refused_with_what_to_do(tmp_path: Path, host: str, says: str) -> None:
    out = run_serve("--home", str(tmp_path / "h"), "--host", host, "--port", str(free_port()), "--api-key", GOOD_KEY)
    assert out.returncode == 2 and "serving" not in out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--host" in lines[0]


def test_serving_is_said_once_the_socket_answers(tmp_path: Path) -> None:
    server = start_server(tmp_path / "h")
    try:
        line = next(x for x in server.log().splitlines() if "serving http://" in x)
        assert f"http://127.0.0.1:{server.port}" in line
        assert server.client.get("/health").status_code == 200
    finally:
        server.stop()


# -- the kept key -------------------------------------------------------------------------------


def test_a_generated_key_is_kept_in_the_home_and_reused(tmp_path: Path) -> None:
    home = tmp_path / "h"
    kept = home / "hermes-server.key"
    proc, _, log = serve_without_key(home, tmp_path)
    try:
        key = generated_key(log.read_text())
        assert f"kept in {kept} (mode 0600)" in log.read_text()
        assert kept.read_text().strip() == key and stat.S_IMODE(kept.stat().st_mode) == 0o600
    finally:
        stop_process(proc)
    proc, url, log = serve_without_key(home, tmp_path)
    try:
        assert "generated API key" not in log.read_text() and key not in log.read_text()
        assert f"API key read from {kept}" in log.read_text()
        assert httpx.get(url + "/api/sessions", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    finally:
        stop_process(proc)


def test_an_unusable_kept_key_is_refused_with_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "hermes-server.key").write_text("changeme\n")
    out = run_serve("--home", str(home), "--port", str(free_port()))
    assert out.returncode == 2
    assert "hermes-server.key is unusable" in out.stderr and "delete it" in out.stderr


# -- JSON start-up lines ----------------------------------------------------------------------


def test_json_log_format_covers_the_start_up_lines(tmp_path: Path) -> None:
    server = start_server(tmp_path / "h", "--log-format", "json", "--no-auth", key=None)
    try:
        server.client.post("/api/sessions", json={"id": "made-here"})
    finally:
        server.stop()
    lines = [line for line in server.log().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is JSON, the start-up lines included
    assert any(r["message"].startswith("serving http://") and r["logger"] == "hermes_server.cli" for r in records)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = run_serve("--home", str(tmp_path / "h"), "--log-format", "json", "--no-auth",
                        "--port", str(taken.getsockname()[1]))
    assert out.returncode == 2 and json.loads(out.stderr)["level"] == "error"
    # A refused option value too, once JSON was asked for.
    out = run_serve("--home", str(tmp_path / "h"), "--log-format", "json", "--port", "99999")
    assert out.returncode == 2 and json.loads(out.stderr)["message"] == "--port must be at most 65535"


def test_access_lines_name_the_created_and_the_effective_session(tmp_path: Path) -> None:
    server = start_server(tmp_path / "h", "--log-format", "json")
    try:
        created = server.client.post("/api/sessions", json={}).json()["session"]["id"]
        answered = server.client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        effective = answered.headers["X-Hermes-Session-Id"]
    finally:
        server.stop()
    access = {r["route"]: r for r in map(json.loads, server.log().splitlines()) if r["logger"] == "hermes_server.access"}
    assert access["/api/sessions"]["session_id"] == created
    assert access["/v1/chat/completions"]["session_id"] == effective != "-"
