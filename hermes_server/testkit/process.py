"""Start and stop a real hermes-server process for a test suite, with or without pytest.

`with HermesServer() as srv:` runs `python -m hermes_server serve` on a free loopback port
over a temporary HERMES_HOME, with `--fixture-api` and a generated key, and removes
process and directory on exit. On Linux the server also dies with the process that
started it (so a killed test runner leaves no server behind), and a later start sweeps
the directories such a runner left. (Linux ties that to the starting *thread*: start it from
a thread that lives as long as the server should.)
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Self

import httpx

from hermes_server.testkit.client import FixtureClient
from hermes_server.testkit.options import HermesOptions

DIR_PREFIX = "hermes-pytest-"
OWNER_FILE = "owner.pid"
SERVER_FILE = "server.pid"
# Variables the launcher decides itself; every other HERMES_SERVER_* setting passes through.
_OWNED_ENV = ("API_SERVER_HOST", "API_SERVER_PORT", "API_SERVER_KEY", "HERMES_HOME", "HERMES_SERVER_NO_AUTH")
_PORT_TRIES = 3


class HermesServerError(RuntimeError):
    """The server could not be started, or is not running when it should be."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _alive(pid: int) -> bool:
    """Whether `pid` runs; a zombie (dead, not yet reaped by whoever adopted it) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:  # it ended meanwhile, or there is no /proc to ask (then trust os.kill)
        return not Path("/proc").is_dir()


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def sweep_orphans(parent: Path | None = None) -> list[Path]:
    """Remove directories of earlier runs whose runner and server are both gone (a runner killed
    with SIGKILL cannot clean up after itself). Returns what was removed."""
    parent = Path(parent or tempfile.gettempdir())
    removed = []
    for path in parent.glob(f"{DIR_PREFIX}*"):
        owner, server = _pid_in(path / OWNER_FILE), _pid_in(path / SERVER_FILE)
        if owner is None or _alive(owner) or (server is not None and _alive(server)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGTERM when its parent dies (Linux prctl), or None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


def _port_taken(log: str) -> bool:
    text = log.lower()
    return "address already in use" in text or "errno 98" in text


class HermesServer:
    """A hermes-server subprocess: `base_url`, `api_key`, `headers`, `home`, a `control` client
    for `/_fixture/`, and an `http` client for the API itself.

    What it serves with comes from `options` (a `HermesOptions`) or the same fields as keywords
    (`HermesServer(deterministic=True, hermes_version="0.21.2")`; keywords win). The rest is how it is
    launched: a given `home` (default: a temporary one, removed on stop), `port` (default: a free
    one, retried if taken meanwhile), `log_path`, `api_key` (default: generated) or `auth=False`
    (`--no-auth`), `fixture_api=False` for a server without the control API (it is then ready when
    `/health` answers 200), and `shutdown_grace` (None: the server's own default)."""

    def __init__(self, options: HermesOptions | None = None, *, agent: str | None = None,
                 hermes_version: str | None = None, deterministic: bool | None = None, extra_args: Sequence[str] = (),
                 fixture: str | Path | None = None, upstream_quirks: bool | None = None,
                 agent_script: str | Path | None = None, agent_delay: float | None = None,
                 compress_after_messages: int | None = None, flags: Sequence[str] = (),
                 api_key: str | None = None, auth: bool = True, fixture_api: bool = True,
                 home: str | Path | None = None, port: int = 0, log_path: str | Path | None = None,
                 host: str = "127.0.0.1", startup_timeout: float | None = None, python: str | None = None,
                 env: Mapping[str, str] | None = None, shutdown_grace: float | None = 1.0) -> None:
        given = {"agent": agent, "hermes_version": hermes_version, "deterministic": deterministic,
                 "fixture": fixture, "upstream_quirks": upstream_quirks,
                 "agent_script": agent_script, "agent_delay": agent_delay,
                 "compress_after_messages": compress_after_messages, "startup_timeout": startup_timeout}
        base = options or HermesOptions()
        self.options = base.replace(**{k: v for k, v in given.items() if v is not None},
                                    flags=(*base.flags, *flags, *extra_args))
        self.api_key = (api_key or "hermes-test-" + secrets.token_hex(16)) if auth else None
        self.host = host
        self.fixture_api = fixture_api
        self.shutdown_grace = shutdown_grace
        self.python = python or sys.executable
        self.env = dict(env) if env is not None else None
        self.port = port
        self._fixed_port = bool(port)
        self._given_home = Path(home) if home is not None else None
        self._given_log = Path(log_path) if log_path is not None else None
        self.startup_seconds: float | None = None
        self.starts = 0
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._ended: subprocess.Popen[bytes] | None = None  # the last process stopped, for `process`
        self._control: FixtureClient | None = None
        self._http: httpx.Client | None = None

    # The options under their old attribute names (a plugin or suite may read them).
    @property
    def agent(self) -> str | None:
        return self.options.agent

    @property
    def deterministic(self) -> bool:
        return self.options.deterministic

    @property
    def extra_args(self) -> list[str]:
        return list(self.options.flags)

    @property
    def startup_timeout(self) -> float:
        return self.options.startup_timeout

    def __repr__(self) -> str:
        where = self.base_url if self.port else "not started"
        return f"<HermesServer {where} pid={self.pid} home={self._dir and self.home}>"

    # -- what a test uses ---------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def home(self) -> Path:
        return self._given_home or self._workdir() / "home"

    @property
    def log_path(self) -> Path:
        return self._given_log or self._workdir() / "server.log"

    @property
    def control(self) -> FixtureClient:
        if self._control is None:
            raise HermesServerError("the server is not started")
        return self._control

    @property
    def http(self) -> httpx.Client:
        """An httpx client on `base_url` that sends the key, for tests that call the API directly."""
        if self._http is None:
            raise HermesServerError("the server is not started")
        return self._http

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The running (or last stopped) server process, for tests that signal or wait for it themselves."""
        return self._process or self._ended

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """None while running; the exit status once it has ended (negative: killed by that signal)."""
        return self._process.poll() if self._process else None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except (OSError, HermesServerError):
            return 0

    def log_text(self, since: int = 0, limit: int = 64 * 1024) -> str:
        """The server's log from byte `since` (its last `limit` bytes when longer)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(since, self.log_size() - limit))
                return log.read().decode("utf-8", "replace")
        except (OSError, HermesServerError):
            return ""

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> Self:
        """Start the process and wait for its first answer on the control API."""
        if self.alive:
            return self
        if self._dir is None:
            sweep_orphans()
            self._dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
            (self._dir / OWNER_FILE).write_text(str(os.getpid()))
        for attempt in range(1 if self._fixed_port else _PORT_TRIES):
            if not self.port or attempt:
                self.port = free_port(self.host)
            if self._launch():
                return self
        raise HermesServerError(f"hermes-server found no free port in {_PORT_TRIES} tries:\n{self.log_text()}")

    def restart(self) -> Self:
        """A new process over an empty home, on the same port when it is still free (so `base_url`
        stays valid); the log keeps what the previous process wrote."""
        self._end_process()
        if self._given_home is None:
            shutil.rmtree(self.home, ignore_errors=True)
        return self.start()

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        """`sig` (SIGTERM), then SIGKILL after `timeout`; removes the temporary directory (never a
        given home or log). Safe to repeat."""
        code = self._end_process(timeout, sig)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        return code

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------

    def _workdir(self) -> Path:
        if self._dir is None:
            raise HermesServerError("the server is not started")
        return self._dir

    def _command(self) -> list[str]:
        args = [self.python, "-m", "hermes_server", "serve", "--home", str(self.home), "--host", self.host,
                "--port", str(self.port)]
        args += ["--api-key", self.api_key] if self.api_key else ["--no-auth"]
        if self.fixture_api:
            args.append("--fixture-api")
        if self.shutdown_grace is not None:
            args += ["--shutdown-grace", f"{self.shutdown_grace:g}"]
        return args + self.options.serve_args()

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in (self.env if self.env is not None else os.environ).items() if k not in _OWNED_ENV}
        env.update(self.options.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def _launch(self) -> bool:
        """One try on self.port: True once it answers, False when the port was taken meanwhile."""
        since = self.log_size()
        started = time.perf_counter()
        with open(self.log_path, "ab") as log:
            self._process = subprocess.Popen(self._command(), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self._environment(),
                                             preexec_fn=_die_with_parent())
        (self._workdir() / SERVER_FILE).write_text(str(self._process.pid))
        self.starts += 1
        control = FixtureClient(self.base_url, self.api_key)
        deadline = started + self.startup_timeout
        while True:
            code = self._process.poll()
            if code is not None:
                control.close()
                if not self._fixed_port and _port_taken(self.log_text(since)):
                    return False
                raise HermesServerError(f"hermes-server exited with code {code} during start-up "
                                        f"({' '.join(self._command()[2:4])} ...):\n{self.log_text(since)}")
            try:
                if self._answers(control):
                    break
            except httpx.TransportError:
                pass
            if time.perf_counter() > deadline:
                control.close()
                self._end_process()
                raise HermesServerError(f"hermes-server did not answer within {self.startup_timeout} s:\n"
                                        f"{self.log_text(since)}")
            time.sleep(0.01)
        self.startup_seconds = time.perf_counter() - started
        self._control = control
        self._http = httpx.Client(base_url=self.base_url, headers=self.headers, timeout=30.0)
        return True

    def _answers(self, control: FixtureClient) -> bool:
        """Ready: the control API answers (with `--fixture-api`), else `/health` answers 200."""
        if self.fixture_api:
            control.clock.get()
            return True
        return httpx.get(f"{self.base_url}/health", timeout=0.5).status_code == 200

    def _end_process(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> int | None:
        for client in (self._control, self._http):
            if client is not None:
                client.close()
        self._control = self._http = None
        process, self._process = self._process, None
        if process is None:
            return None
        self._ended = process
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        return process.returncode
