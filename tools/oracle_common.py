"""What the side-by-side comparisons with upstream 0.19.0 (`tools/oracle_*diff.py`) share.

- Processes: the oracle (`../shared/oracle/start_upstream.sh`) and hermes-server, each on
  a fresh home inside one temporary `Workbench`, all stopped (by PID) when it closes.
- Transport: one request per fresh connection with the bytes exactly as given (repeated
  headers, announced but unsent bodies, chunked bodies), so both servers see the same wire.
- Masks for what legitimately differs between the oracle's mock agent and our echo agent.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ORACLE_DIR = Path(os.environ.get("HERMES_ORACLE_DIR", REPO.parent / "shared" / "oracle"))
ORACLE_PY = Path(os.environ.get("ORACLE_VENV", "/tmp/hermes-oracle-venv")) / "bin" / "python"
KEY = "oracle-test-key-0123456789abcdef"
# Present on every answer of both servers' JSON routes; compared as present or not.
SECURITY_HEADER = "x-content-type-options"
# The agent's reply: the oracle's mock model says MOCK-REPLY, our echo agent ECHO-REPLY.
REPLY = re.compile(r"^(MOCK|ECHO)-REPLY to:")

Body = bytes | Callable[[], Iterable[bytes]] | None


def rebased(ports: dict[Any, int]) -> dict[Any, int]:
    """A tool's fixed ports, moved so the lowest is HERMES_DIFF_PORT_BASE when that is set
    (several people comparing at once each keep to their own port range)."""
    base = os.environ.get("HERMES_DIFF_PORT_BASE", "").strip()
    if not base:
        return ports
    shift = int(base) - min(ports.values())
    return {name: port + shift for name, port in ports.items()}


def js(value: Any) -> bytes:
    return json.dumps(value).encode()


def decoded_body(body: bytes, mask: Callable[[str | None, Any], Any] = lambda key, value: value) -> Any:
    """A JSON body, parsed and passed through `mask(None, value)` (the tool's normalisation);
    any other body as its text."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")
    return mask(None, parsed)


def command_line(description: str) -> argparse.ArgumentParser:
    """The options every comparison takes (a tool may add its own)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="also list the identical answers")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes and logs")
    parser.add_argument("--upstream-quirks", action="store_true",
                        help="start hermes-server with --upstream-quirks and expect no deviation at all")
    return parser


# -- transport ------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[str, str]  # lower-cased names; a repeated header's values joined by ", "
    body: bytes


def exchange(port: int, method: str, path: str, body: Body = None,
             headers: Iterable[tuple[str, str | bytes]] = (), *, announce_only: bool = False,
             timeout: float = 120) -> Answer:
    """One request on a new connection, sent exactly as given.

    `headers` go out in order (a name may repeat). Bytes go with a Content-Length (unless
    `headers` has one) and, with `announce_only`, are never sent; a callable gives the
    chunks of a `Transfer-Encoding: chunked` body. A server that answers before reading
    the whole body may close the socket under us: what it answered is still read.
    """
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        headers = list(headers)
        for name, value in headers:
            conn.putheader(name, value)
        chunks: Iterable[bytes] = ()
        if callable(body):
            conn.putheader("Transfer-Encoding", "chunked")
            chunks = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in itertools.chain(body(), [b""]))
        elif body is not None:
            if not any(name.lower() == "content-length" for name, _ in headers):
                conn.putheader("Content-Length", str(len(body)))
            chunks = () if announce_only else (body,)
        conn.endheaders()
        try:
            for chunk in chunks:
                conn.send(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = conn.getresponse()
        names = {name.lower() for name, _ in resp.getheaders()}
        return Answer(resp.status, {name: resp.getheader(name) for name in names}, resp.read())
    finally:
        conn.close()


# -- processes ------------------------------------------------------------------


def start_oracle(home: Path, port: int, *, no_key: bool) -> None:
    """Upstream 0.19.0 on `port` (its mock model on `port + 1`), with KEY or without any key."""
    env = dict(os.environ, API_SERVER_KEY=KEY)
    if no_key:
        env["ORACLE_NO_KEY"] = "1"
    out = subprocess.run([str(ORACLE_DIR / "start_upstream.sh"), str(home), str(port), str(port + 1)],
                         env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or "READY" not in out.stdout:
        raise SystemExit(f"oracle did not start on {port}:\n{out.stdout}\n{out.stderr}")


def stop_oracle(home: Path) -> None:
    subprocess.run([str(ORACLE_DIR / "stop_upstream.sh"), str(home)], capture_output=True, timeout=60)


def start_ours(home: Path, port: int, *, no_key: bool, log: Path, extra: Iterable[str] = ()) -> subprocess.Popen:
    """hermes-server from this checkout, with KEY or `--no-auth` (and `extra` options), once /health answers."""
    args = [sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--port", str(port)]
    args += ["--no-auth"] if no_key else ["--api-key", KEY]
    args += list(extra)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_"))}
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"hermes-server exited:\n{log.read_text()}")
        try:
            if exchange(port, "GET", "/health", timeout=60).status == 200:
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"hermes-server did not start on {port}")


def stop_ours(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


class Workbench:
    """A temporary directory of homes and logs, and every server started in it.

    On exit the servers are stopped (by PID, most recent first) and the directory is
    removed, unless `keep`, which prints where it is instead.
    """

    def __init__(self, prefix: str, keep: bool) -> None:
        self.prefix = prefix
        self.keep = keep
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Workbench:
        if not ORACLE_PY.exists():
            raise SystemExit(f"{ORACLE_PY} is missing: run {ORACLE_DIR / 'setup.sh'} first")
        self.dir = Path(tempfile.mkdtemp(prefix=self.prefix))
        return self

    def home(self, name: str) -> Path:
        return self.dir / name

    def oracle(self, name: str, port: int, *, no_key: bool = False) -> Path:
        """Start the oracle on the home `name`; returns the home."""
        home = self.home(name)
        self._stack.callback(stop_oracle, home)  # also when it fails half-way through starting
        start_oracle(home, port, no_key=no_key)
        return home

    def ours(self, name: str, port: int, *, no_key: bool = False, extra: Iterable[str] = ()) -> Path:
        """Start hermes-server on the home `name` (log `name`.log beside it); returns the home."""
        home = self.home(name)
        self._stack.callback(stop_ours, start_ours(home, port, no_key=no_key, log=self.dir / f"{name}.log",
                                                   extra=extra))
        return home

    def process(self, name: str, args: list[str]) -> subprocess.Popen:
        """Start a helper process (log `name`.log), stopped with the servers."""
        proc = subprocess.Popen(args, stdout=(self.dir / f"{name}.log").open("wb"), stderr=subprocess.STDOUT)
        self._stack.callback(stop_ours, proc)
        return proc

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        if self.keep:
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# -- normalisation --------------------------------------------------------------


def mask_agent_value(key: str | None, value: Any, *, timestamps: Collection[str], counters: Collection[str]) -> Any:
    """`value` (under `key`) with what the agent decides masked: times, token counts, the reply
    text, and the model id upstream's agent records after its first call (`mock-model`)."""
    if key in timestamps and isinstance(value, (int, float)) and not isinstance(value, bool):
        return "<ts>"
    if key in counters and isinstance(value, int):
        return "<n>"
    if isinstance(value, str) and REPLY.match(value):
        return "<reply>"
    if key == "model" and value == "mock-model":
        return "hermes-agent"
    return value


def print_differences(a: dict[str, Any], b: dict[str, Any], width: int) -> None:
    """Each field of two normalised answers that differs, oracle first, cut at `width`."""
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            print(f"  {key}:\n    oracle: {json.dumps(a.get(key))[:width]}\n    ours:   {json.dumps(b.get(key))[:width]}")
