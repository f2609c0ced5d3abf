"""Run a real hermes-server (uvicorn, loopback, ephemeral port, real state.db) for tests.

Two lanes, one API (`start_server` -> `RunningServer`):

- a subprocess, launched by the project's own testkit (`hermes_server.testkit.HermesServer`):
  for everything where the process matters (signals, exit codes, start-up output, its log,
  `sys.modules`, SIGKILL, other processes on state.db, shutdown);
- in process (tests/support/inprocess.py): the same app under real uvicorn on a thread, over a
  loopback port, started in milliseconds: for contract tests. A test module opts in with
  `pytestmark = pytest.mark.in_process`; then every `start_server` of the module (and the
  `server`/`fresh_server` fixtures) runs in process unless it passes `in_process=False`.

Either way tests talk to it over real sockets with httpx, so streaming, disconnects and
storage behave as they do for users.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from hermes_server.testkit import HermesServer, HermesServerError
from hermes_server.testkit.process import free_port as _free_port
from tests.support.db import integrity, lineage_problems, missing_sessions

if TYPE_CHECKING:
    from tests.support.inprocess import InProcessServer

KEY = "test-key-0123456789abcdef"


class Lane:
    """Whether `start_server` runs servers in process when not told: set per module by conftest.py."""

    in_process = False


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything hermes-server reads (`API_SERVER_*`, `HERMES_*`), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_"))}
    env.update(extra)
    return env


def free_port() -> int:
    return _free_port("127.0.0.1")


@dataclass
class RunningServer:
    """A hermes-server (a subprocess, or in process) and a client bound to it."""

    home: Path
    port: int
    key: str | None
    launcher: HermesServer | InProcessServer
    log_path: Path | None
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    @property
    def in_process(self) -> bool:
        return not isinstance(self.launcher, HermesServer)

    @property
    def process(self) -> subprocess.Popen[bytes]:
        if not isinstance(self.launcher, HermesServer) or self.launcher.process is None:
            raise RuntimeError("an in-process server has no process: start this one with in_process=False")
        return self.launcher.process

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        return self.home / "state.db"

    def log(self) -> str:
        if self.log_path is None:
            raise RuntimeError("an in-process server logs into the test process, not a log of its own: "
                               "start this one with in_process=False")
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Stop the server we started (the process by PID, with `sig`) and wait for it."""
        self.client.close()
        if not isinstance(self.launcher, HermesServer):
            return self.launcher.stop(timeout)
        self.launcher.stop(timeout, sig)
        return self.process.returncode  # the process we stopped, also when it had ended before


def start_server(home: Path, *extra: str, key: str | None = KEY, env: dict[str, str] | None = None,
                 port: int | None = None, wait: float = 20.0, in_process: bool | None = None) -> RunningServer:
    """Start `hermes-server serve` and wait until /health answers (in process: see the module doc)."""
    if in_process if in_process is not None else Lane.in_process:
        from tests.support.inprocess import InProcessServer

        port = port or free_port()
        args = ["--home", str(home), "--host", "127.0.0.1", "--port", str(port)]
        args += [*(["--api-key", key] if key else ["--no-auth"]), *extra]
        return RunningServer(home, port, key, InProcessServer(args, env).start(wait), None)
    port = port or free_port()
    # Beside the home, unless the home is deliberately unusable (below a file, not yet created).
    log_dir = home.parent if home.parent.is_dir() else Path(tempfile.mkdtemp(prefix="hermes-server-log-"))
    log_path = log_dir / f"server-{port}.log"
    log_path.unlink(missing_ok=True)
    launcher = HermesServer(home=home, port=port, log_path=log_path, api_key=key, auth=key is not None,
                            fixture_api=False, shutdown_grace=None, flags=extra, env=clean_env(**(env or {})),
                            startup_timeout=wait)
    try:
        launcher.start()
    except HermesServerError:  # a RuntimeError, with the exit code and the server's log
        launcher.stop()
        raise
    return RunningServer(home, port, key, launcher, log_path)


def serve_without_key(home: Path, log_dir: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """`serve` with neither --api-key nor --no-auth (so it generates or reads the kept key), once
    /health answers: (process, base URL, log). The testkit always passes one of the two."""
    port = free_port()
    log = log_dir / f"serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "hermes_server", "serve", "--home", str(home),
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=clean_env())
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, url, log.read_text)
    except AssertionError:
        proc.kill()
        raise
    return proc, url, log


def wait_until_serving(proc: subprocess.Popen[Any], url: str, log: Callable[[], str], limit: float = 20) -> None:
    """Wait until `url`/health answers 200; fail with `log()` if the process ends or `limit` seconds pass."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, log()
        try:
            if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"not serving after {limit:g} s:\n{log()}")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server `serve_without_key` started (that process, by its handle) and wait for it."""
    proc.terminate()
    proc.wait(15)


def generated_key(log: str) -> str:
    """The key a start announced it generated."""
    found = re.search(r"generated API key \(send as 'Authorization: Bearer <key>'\): (\S+)", log)
    assert found is not None, log
    return found.group(1)


def start_with_script(home: Path, script: Any, *extra: str, **kwargs: Any) -> RunningServer:
    """start_server with `--agent script` playing `script` (written as script.json beside the home)."""
    path = home.parent / "script.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(script))
    return start_server(home, "--agent", "script", "--agent-script", str(path), *extra, **kwargs)


# A Python traceback, or a record at ERROR/CRITICAL level, in the server's log.
_TROUBLE = re.compile(r"Traceback \(most recent call last\)|\b(ERROR|CRITICAL)\b")


def log_trouble(server: RunningServer) -> list[str]:
    """Log lines that carry a traceback or an ERROR record."""
    return [line for line in server.log().splitlines() if _TROUBLE.search(line)]


def assert_sound(server: RunningServer, acknowledged: Iterable[str] = ()) -> None:
    """After a fault: integrity ok, lineage invariants hold, every acknowledged session is
    present, and the log has no traceback or ERROR record."""
    assert integrity(server.db_path) == "ok"
    assert lineage_problems(server.db_path) == []
    assert missing_sessions(server.db_path, acknowledged) == []
    assert log_trouble(server) == []
