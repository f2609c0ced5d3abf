"""Start a herm.run server for the HTTP tests and drive it: the API client and test control.

`start_herm_run` starts the routes-only harness (tests/hermrun/harness.py) today. Once
the dialect is wired into hermes-server it is to start `serve --herm-run --fixture-api`
instead (the control calls below are the ones that server gives), and every test in
this folder runs unchanged against the real server.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.server import clean_env, free_port

KEY = "test-key-0123456789abcdef"


@dataclass
class HermRunServer:
    """A running server, a herm.run client (x-api-key) and a control client (Bearer)."""

    home: Path
    port: int
    args: tuple[str, ...]
    key: str | None
    process: subprocess.Popen
    log_path: Path
    api_key_header: str | None = None
    client: httpx.Client = field(init=False)
    control: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        api_key = self.api_key_header or self.key
        self.client = httpx.Client(base_url=self.url, headers={"x-api-key": api_key} if api_key else {}, timeout=30)
        self.control = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"} if self.key
                                    else {}, timeout=30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> Path:
        return self.home / "herm-run.db"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    # -- test control ------------------------------------------------------

    def clock(self, **body: float) -> dict[str, Any]:
        """POST /_fixture/clock: `now`, `advance` and/or `step` (the clock becomes manual)."""
        r = self.control.post("/_fixture/clock", json=body)
        assert r.status_code == 200, r.text
        return r.json()

    def seed(self, herm_run: dict[str, Any]) -> httpx.Response:
        return self.control.post("/_fixture/seed", json={"herm_run": herm_run})

    def reset(self) -> dict[str, Any]:
        r = self.control.post("/_fixture/reset", json={})
        assert r.status_code == 200, r.text
        return r.json()

    def set_state(self, session_id: str, **body: Any) -> httpx.Response:
        """Give a session a status (`running`, `waiting_on_human` …) and/or a usage snapshot."""
        return self.control.post(f"/_fixture/herm-run/sessions/{session_id}", json=body)

    # -- API -----------------------------------------------------------------

    def create(self, **body: Any) -> dict[str, Any]:
        """POST /v1/sessions, which must answer 201; the session."""
        r = self.client.post("/v1/sessions", json=body)
        assert r.status_code == 201, r.text
        return r.json()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.client.close()
        self.control.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


def start_herm_run(home: Path, *extra: str, key: str | None = KEY, fixture: dict[str, Any] | None = None,
                   api_key_header: str | None = None, wait: float = 20.0) -> HermRunServer:
    """Start the server over `home` (created if needed) and wait until it answers."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    args = [*extra]
    if fixture is not None:
        path = home.parent / f"fixture-{port}.json"
        path.write_text(json.dumps(fixture))
        args += ["--fixture", str(path)]
    command = [sys.executable, "-m", "tests.hermrun.harness", "--home", str(home), "--port", str(port),
               *(["--api-key", key] if key else []), *args]
    log_path = home.parent / f"herm-run-{port}.log"
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=clean_env())
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"herm.run server exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=0.5)
            return HermRunServer(home, port, tuple(args), key, process, log_path, api_key_header)
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"herm.run server did not answer within {wait}s:\n{log_path.read_text()}")


def error(type_: str, message: str, param: str | None = None) -> dict[str, Any]:
    """herm.run's error envelope, for equality assertions."""
    return {"error": {"type": type_, "message": message, "param": param}}
