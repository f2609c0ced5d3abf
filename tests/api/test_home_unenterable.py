"""A home the server may not even enter (mode 700, another owner: the usual shape of a mounted
`~/.hermes`) is said, not crashed on: the server starts, names the problem once, answers 503 on
sessions and fails readiness, and no traceback reaches the log.

As root, the server's process keeps uid 0 but loses the two capabilities that let root into any
folder (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), dropped from its bounding set before it starts;
as another user, a folder of mode 000 is enough.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import KEY, clean_env, free_port, wait_until_serving

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _as_a_stranger() -> None:
    """In the child, before exec: root no longer passes folder permissions (a non-root user never did)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def locked_home(tmp_path: Path) -> Iterator[Path]:
    """A home holding a .env and a state.db, that the server's process may not enter."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text("API_SERVER_MODEL_NAME=from-the-locked-home\n")
    (home / "state.db").write_bytes(b"")
    if os.geteuid() == 0:
        os.chown(home, 4321, 4321)
        home.chmod(0o700)
    else:
        home.chmod(0o000)
    yield home
    home.chmod(0o700)


def _run(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "hermes_server", *argv], env=env, preexec_fn=_as_a_stranger,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.parametrize("key", [KEY, None], ids=["key-given", "no-key"])
def test_a_home_it_cannot_enter_is_said_and_reported_not_ready(locked_home: Path, key: str | None) -> None:
    port = free_port()
    env = clean_env(HERMES_HOME=str(locked_home), API_SERVER_PORT=str(port), **({"API_SERVER_KEY": key} if key else {}))
    url = f"http://127.0.0.1:{port}"
    server = _run(["gateway", "run"], env)
    try:
        wait_until_serving(server, url, lambda: server.stdout.read() if server.stdout else "")
        sent = key or "no-key-could-be-kept-0123456789"
        assert httpx.get(url + "/api/sessions", headers={"Authorization": f"Bearer {sent}"}, timeout=10).status_code \
            == (503 if key else 401)
        ready = _run(["healthcheck", "--ready"], env)
        out, _ = ready.communicate(timeout=60)
        assert ready.returncode == 1
        assert ("not ready: state_db degraded (PermissionError)" if key else "status 401") in out, out
        if key:
            jobs = httpx.get(url + "/api/jobs", headers={"Authorization": f"Bearer {key}"}, timeout=10)
            assert jobs.status_code == 500 and "Permission denied" in jobs.json()["error"]
    finally:
        server.terminate()
        log, _ = server.communicate(timeout=20)
    assert server.returncode == 0, log
    assert "Traceback" not in log
    assert log.count(f"state.db cannot be opened at {locked_home / 'state.db'}: Permission denied") == 1, log
    if key is None:  # generated, said, and said not to be kept
        assert "generated API key" in log and "not kept (cannot enter the home" in log
