"""The hermes-server references `verify` compares a target with: each the real app under uvicorn on a
thread of this process, on a loopback port and a fresh temporary home.

A subprocess per reference would cost an interpreter start and every import each; these cost a
`create_app` and a bind. Their logs are silenced: a reference started bug-for-bug answers with
0.19.0's 500s on purpose, and those are findings for the report, not errors of this process.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_server.cli.listen import bind
from hermes_server.contract.play import Side
from hermes_server.contract.verify import Reference
from hermes_server.contract.wire import Endpoint, exchange, local

if TYPE_CHECKING:
    import uvicorn


class ServerThread:
    """uvicorn serving on a socket already bound, on a daemon thread of this process (no signal
    handling: uvicorn installs none off the main thread). The suite's in-process lane uses it too."""

    def __init__(self, server: uvicorn.Server, sock: socket.socket, name: str) -> None:
        self.server, self._sock = server, sock
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.failure: BaseException | None = None

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self._sock])
        except BaseException as exc:  # noqa: BLE001 - kept for the starter to report
            self.failure = exc
        finally:
            self._sock.close()

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 15.0) -> None:
        """Graceful shutdown as on SIGTERM (in-flight requests get the grace), forced after `timeout`."""
        self.server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            self.server.force_exit = True
            self._thread.join(5)


class InProcess:
    """`hermes-server serve ARGS` as an app on a uvicorn thread."""

    def __init__(self, args: list[str]) -> None:
        import uvicorn
        from sse_starlette.sse import AppStatus

        from hermes_server.app import create_app
        from hermes_server.cli.options import add_options
        from hermes_server.cli.serve import serve_options, settings_from_args, uvicorn_config

        self._sock = bind("127.0.0.1", 0)
        self.port = self._sock.getsockname()[1]
        parser = argparse.ArgumentParser(prog="hermes-server serve")
        add_options(parser, *serve_options())
        settings, _ = settings_from_args(parser.parse_args([*args, "--port", str(self.port)]))
        AppStatus.disable_automatic_graceful_drain()
        server = uvicorn.Server(uvicorn_config(create_app(settings), settings))
        self._thread = ServerThread(server, self._sock, f"verify-reference:{self.port}")

    def start(self, wait: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not self._thread.alive:
                raise RuntimeError(f"a reference hermes-server stopped while starting: {self._thread.failure!r}")
            if self._thread.server.started:
                with contextlib.suppress(OSError):
                    if exchange(local(self.port), "GET", "/health", timeout=2).status == 200:
                        return
            time.sleep(0.01)
        raise RuntimeError(f"a reference hermes-server did not answer within {wait:.0f} s")

    def stop(self) -> None:
        self._thread.stop()


def quiet() -> None:
    """Silence the references' logs (and uvicorn's) in this process."""
    for name in ("hermes_server", "uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def references(wanted: Sequence[Reference], model_name: str | None) -> Iterator[dict[Reference, Side]]:
    """Each reference started (its own home and key), as a side to play on; all stopped at the end."""
    quiet()
    with tempfile.TemporaryDirectory(prefix="hermes-verify-") as root, contextlib.ExitStack() as stack:
        sides: dict[Reference, Side] = {}
        for ref in wanted:
            key = secrets.token_hex(16)
            home = Path(root) / f"{ref.version}-{'quirks' if ref.quirks else 'served'}"
            args = ["--home", str(home), "--api-key", key, "--hermes-version", ref.version, "--log-level", "error"]
            args += ["--upstream-quirks"] if ref.quirks else []
            args += ["--model-name", model_name] if model_name else []
            server = InProcess(args)
            stack.callback(server.stop)
            server.start()
            where: Endpoint = local(server.port)
            sides[ref] = Side(ref.name, {("key", "fast"): where}, {"key": key})
        yield sides
