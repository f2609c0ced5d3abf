"""Run the real hermes-agent 0.19.0 API server (its aiohttp adapter alone) on loopback, for tests.

The interop venv (`make .venv-upstream/.installed`, found by tests/support/upstream.py) holds
the package; its `gateway.platforms.api_server.APIServerAdapter` is started by a few lines of
our own glue run with that venv's python (`_LAUNCHER` below), over a fresh HERMES_HOME whose
config.yaml points the model at `tools/scriptable_mock_llm.py` on another loopback port. No
gateway runner, no messaging platform, no cron ticker: the API server exactly as a client of
0.19.0 meets it, for the tests that must measure upstream itself (request limits, `verify`).

    with UpstreamServer(tmp_path / "home") as upstream:
        httpx.get(f"{upstream.url}/health")

Both processes are stopped by PID when the block ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from tests.support.server import free_port
from tests.support.upstream import require_api_server

REPO = Path(__file__).resolve().parents[2]
MOCK = REPO / "tools" / "scriptable_mock_llm.py"
KEY = "upstream-test-key-0123456789abcdef"

# Our own glue, run by the interop venv's python: build the adapter from the key and address in
# argv, connect, touch the ready file, serve until SIGTERM, disconnect.
_LAUNCHER = r"""
import asyncio, os, signal, sys
from gateway.config import PlatformConfig
from gateway.platforms.api_server import APIServerAdapter

async def main(host, port, key, ready):
    adapter = APIServerAdapter(PlatformConfig(enabled=True, extra={"host": host, "port": int(port), "key": key}))
    if not await adapter.connect():
        print("adapter.connect() refused to start", file=sys.stderr)
        return 1
    open(ready, "w").write(str(os.getpid()))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await asyncio.wait_for(adapter.disconnect(), timeout=10)
    return 0

code = asyncio.run(main(*sys.argv[1:5]))
sys.stderr.flush()
os._exit(code)  # the agent's executor threads may linger
"""

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY")


class UpstreamServer:
    """hermes-agent 0.19.0's API server and its mock model, on two free loopback ports."""

    def __init__(self, home: Path, *, key: str = KEY, wait: float = 60.0) -> None:
        self.home = home
        self.key = key
        self.wait = wait
        self.port = free_port()
        self.mock_port = free_port()
        self._processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.home / "upstream-api.log"

    def __enter__(self) -> UpstreamServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.yaml").write_text(
            "model:\n  provider: custom\n"
            f"  base_url: http://127.0.0.1:{self.mock_port}/v1\n"
            "  default: mock-model\n  api_key: mock-llm-key-0123456789abcdef\n  context_length: 131072\n")
        env = {k: v for k, v in os.environ.items()
               if k not in _PROXY_VARIABLES and not k.startswith(("HERMES_", "API_SERVER_"))}
        env.update(HERMES_HOME=str(self.home), HOME=str(self.home), NO_PROXY="*", no_proxy="*", PYTHONUNBUFFERED="1",
                   PYTHONDONTWRITEBYTECODE="1", API_SERVER_KEY=self.key)
        python = str(require_api_server())
        with (self.home / "mock.log").open("wb") as mock_log:
            self._processes.append(subprocess.Popen([sys.executable, str(MOCK), "--port", str(self.mock_port)],
                                                    stdout=mock_log, stderr=subprocess.STDOUT, env=env))
        ready = self.home / "upstream-api.ready"
        ready.unlink(missing_ok=True)
        with self.log_path.open("wb") as api_log:
            api = subprocess.Popen([python, "-c", _LAUNCHER, "127.0.0.1", str(self.port), self.key, str(ready)],
                                   stdout=api_log, stderr=subprocess.STDOUT, env=env, cwd=self.home)
        self._processes.append(api)
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            if api.poll() is not None:
                self.stop()
                raise RuntimeError(f"upstream API server exited ({api.returncode}): {self.log_path.read_text()}")
            if ready.exists() and self._answers():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"upstream API server not ready after {self.wait} s: {self.log_path.read_text()}")

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """Stop both processes we started (by PID), the API server first."""
        for process in reversed(self._processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        self._processes.clear()
