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
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from hermes_server.cli.listen import bind
from hermes_server.contract.play import Side
from hermes_server.contract.verify import Reference
from hermes_server.contract.wire import Endpoint, exchange, local


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
        self._server = uvicorn.Server(uvicorn_config(create_app(settings), settings))
        self._thread = threading.Thread(target=self._run, name=f"verify-reference:{self.port}", daemon=True)
        self.failure: BaseException | None = None

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:  # noqa: BLE001 - kept for start() to report
            self.failure = exc
        finally:
            self._sock.close()

    def start(self, wait: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not self._thread.is_alive():
                raise RuntimeError(f"a reference hermes-server stopped while starting: {self.failure!r}")
            if self._server.started:
                with contextlib.suppress(OSError):
                    if exchange(local(self.port), "GET", "/health", timeout=2).status == 200:
                        return
            time.sleep(0.01)
        raise RuntimeError(f"a reference hermes-server did not answer within {wait:.0f} s")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(15)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(5)


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
