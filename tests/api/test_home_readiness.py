"""A home that cannot hold state.db: the log says why once (and when it changes), readiness tells the truth."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.server import KEY, RunningServer, clean_env, free_port, start_server

pytestmark = pytest.mark.slow

WARNING = "state.db cannot be opened at"


def _ready(server: RunningServer) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_server", "healthcheck", "--ready", "--url", server.url],
                          capture_output=True, text=True, timeout=30, env=clean_env(API_SERVER_KEY=KEY))


def _live(server: RunningServer) -> int:
    return subprocess.run([sys.executable, "-m", "hermes_server", "healthcheck", "--url", server.url],
                          capture_output=True, timeout=30, env=clean_env()).returncode


def _state_db(server: RunningServer) -> dict:
    body = server.client.get("/health/detailed").json()
    assert body["status"] == body["readiness"]["status"]
    return body["readiness"]["checks"]["state_db"]


@pytest.mark.parametrize(("make_home", "reason"), [
    (lambda tmp: (tmp / "a-file").write_text("not a directory") and tmp / "a-file", "FileExistsError"),
    (lambda tmp: Path("/proc/hermes-server/home"), "FileNotFoundError"),
])
def test_an_unusable_home_is_named_once_and_fails_readiness(tmp_path: Path, make_home, reason: str) -> None:
    home = make_home(tmp_path)
    server = start_server(home)
    try:
        assert _state_db(server) == {"status": "degraded", "detail": reason}
        for _ in range(3):
            assert server.client.get("/api/sessions").status_code == 503
        assert server.log().count(WARNING) == 1
        assert "Traceback" not in server.log()
        ready = _ready(server)
        assert ready.returncode == 1 and f"not ready: state_db degraded ({reason})" in ready.stderr
        assert _live(server) == 0  # alive, just not ready
    finally:
        server.stop()


def test_the_log_says_again_when_the_problem_goes_away(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("in the way")
    server = start_server(home)
    try:
        assert server.client.get("/api/sessions").status_code == 503
        home.unlink()
        home.mkdir()
        assert server.client.get("/api/sessions").status_code == 200
        assert server.log().count(WARNING) == 1 and "opens again" in server.log()
        assert _state_db(server) == {"status": "ok"}
        assert _ready(server).returncode == 0
    finally:
        server.stop()


def test_a_fresh_home_is_ready_and_not_yet_initialized(tmp_path: Path) -> None:
    server = start_server(tmp_path / "fresh")
    try:
        assert _state_db(server) == {"status": "ok", "detail": "not initialized"}
        assert not (tmp_path / "fresh" / "state.db").exists()  # the probe creates no database
        assert _ready(server).returncode == 0 and WARNING not in server.log()
    finally:
        server.stop()


def _lock(directory: Path) -> bool:
    """Make `directory` unwritable, even for root (immutable); False when this machine cannot."""
    if os.geteuid() != 0:
        directory.chmod(0o500)
        return True
    return shutil.which("chattr") is not None and subprocess.run(["chattr", "+i", str(directory)],
                                                                 capture_output=True).returncode == 0


def _unlock(directory: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True)
    directory.chmod(0o700)


def test_an_unwritable_home_is_named(tmp_path: Path) -> None:
    home = tmp_path / "locked"
    home.mkdir()
    if not _lock(home):
        pytest.skip("root here, and chattr +i (the only lock root feels) is not available on this filesystem")
    try:
        server = start_server(home)
        try:
            assert _state_db(server) == {"status": "degraded", "detail": "PermissionError"}
            assert server.client.get("/api/sessions").status_code == 503
            assert server.log().count(WARNING) == 1
            assert _ready(server).returncode == 1
        finally:
            server.stop()
    finally:
        _unlock(home)


def test_without_a_key_an_unusable_home_still_starts_and_says_the_key_is_not_kept(tmp_path: Path) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a directory")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=clean_env())
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        proc.terminate()
        out = proc.communicate(timeout=15)[0]
    assert "generated API key" in out and "not kept" in out and "a restart makes a new one" in out
