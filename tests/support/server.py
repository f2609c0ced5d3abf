"""Run a real hermes-server (uvicorn, loopback, ephemeral port, real state.db) for tests.

Tests talk to it over real sockets with httpx; nothing is in-process, so streaming,
shutdown and storage behave as they do for users.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import httpx

from tests.support.db import integrity, lineage_problems, missing_sessions

KEY = "test-key-0123456789abcdef"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything hermes-server reads (`API_SERVER_*`, `HERMES_*`), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_"))}
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    """A hermes-server process and a client bound to it."""

    home: Path
    port: int
    key: str | None
    process: subprocess.Popen
    log_path: Path
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        return self.home / "state.db"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        """Stop the process we started (by PID) and wait for it."""
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


def start_server(home: Path, *extra: str, key: str | None = KEY, env: dict[str, str] | None = None,
                 port: int | None = None, wait: float = 20.0) -> RunningServer:
    """Start `hermes-server serve` and wait until /health answers."""
    port = port or free_port()
    args = [sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--host", "127.0.0.1",
            "--port", str(port)]
    args += ["--api-key", key] if key else ["--no-auth"]
    args += list(extra)
    # Beside the home, unless the home is deliberately unusable (below a file, not yet created).
    log_dir = home.parent if home.parent.is_dir() else Path(tempfile.mkdtemp(prefix="hermes-server-log-"))
    log_path = log_dir / f"server-{port}.log"
    run_env = clean_env(**(env or {}))
    log_file = open(log_path, "wb")
    process = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT, env=run_env)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"hermes-server exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                return RunningServer(home, port, key, process, log_path)
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"hermes-server did not answer within {wait}s:\n{log_path.read_text()}")


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
