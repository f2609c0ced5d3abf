"""The in-process lane: the real app under real uvicorn, on a thread of the test process.

A subprocess costs an interpreter start and every import (most of a second on a busy machine);
this costs a `create_app` and a bind. Sockets, HTTP parsing, streams and disconnects stay real:
clients still talk to a loopback port. What is not the same: there is no process to signal,
kill or read `sys.modules` of, no start-up output, and the log goes to the test process's
logging (shared by every in-process server), so `RunningServer.log()` refuses. Tests that need
any of that run on a subprocess server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx
import uvicorn
from sse_starlette.sse import AppStatus

from hermes_server.app import create_app
from hermes_server.cli.listen import bind
from hermes_server.cli.main import build_parser
from hermes_server.cli.references import ServerThread
from hermes_server.cli.serve import settings_from_args, uvicorn_config

# Variables the server reads (flags' environment fallbacks); the lane serves as if none were set,
# as a subprocess started with clean_env() does.
_SERVER_ENV = ("API_SERVER_", "HERMES_")


@contextmanager
def _clean_environ(extra: Mapping[str, str]) -> Iterator[None]:
    """os.environ without the server's variables (plus `extra`) while the settings are resolved."""
    saved = dict(os.environ)
    try:
        for name in [k for k in os.environ if k.startswith(_SERVER_ENV)]:
            del os.environ[name]
        os.environ.update(extra)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class InProcessServer:
    """`hermes-server serve ARGS` as an app on a uvicorn thread; `stop()` is a graceful shutdown."""

    def __init__(self, args: list[str], env: Mapping[str, str] | None = None) -> None:
        with _clean_environ(env or {}):
            settings, _ = settings_from_args(build_parser().parse_args(["serve", *args]))
            app = create_app(settings)
        self.settings = settings
        # As `serve` does: a stream gets the shutdown grace like any request, not an instant cut.
        AppStatus.disable_automatic_graceful_drain()
        # The same uvicorn settings as `serve` (cli/serve.py), minus its signal handling.
        self._server = uvicorn.Server(uvicorn_config(app, settings))
        self._thread = ServerThread(self._server, bind(settings.host, settings.port), f"hermes-server:{settings.port}")

    @property
    def failure(self) -> BaseException | None:
        return self._thread.failure

    @property
    def alive(self) -> bool:
        return self._thread.alive

    def start(self, wait: float) -> InProcessServer:
        """Run the thread and wait until /health answers 200."""
        self._thread.start()
        url = f"http://{self.settings.host}:{self.settings.port}/health"
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not self._thread.alive:
                raise RuntimeError(f"in-process hermes-server stopped during start-up: {self.failure!r}")
            if self._server.started:
                try:
                    if httpx.get(url, timeout=0.5).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.005)
        self.stop()
        raise RuntimeError(f"in-process hermes-server did not answer within {wait}s")

    def stop(self, timeout: float = 15.0) -> int:
        """Graceful shutdown as on SIGTERM (in-flight requests get the grace); 0 once stopped."""
        self._thread.stop(timeout)
        return 0 if self._server.started and self.failure is None else 3
