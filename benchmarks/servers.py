"""Processes under test: hermes-server (of any version profile), upstream hermes-agent 0.19.0, and the ceiling app.

Each is started by us, on a loopback port, and stopped by its PID. The upstream
oracle is optional: it needs the virtualenv `../shared/oracle/setup.sh` creates.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

from hermes_server.domain.profiles import DEFAULT_VERSION

HERMES_KEY = "bench-key-0123456789abcdef"
UPSTREAM_KEY = "oracle-test-key-0123456789abcdef"
REPO = Path(__file__).resolve().parent.parent
# The oracle scripts beside the checkout (../shared/oracle), unless HERMES_ORACLE_DIR names them.
ORACLE_DIR = Path(os.environ.get("HERMES_ORACLE_DIR") or REPO.parent / "shared" / "oracle")
# One line of hermes-server's access log: "… hermes_server.access: GET /api/sessions 200 0.6ms …".
_ACCESS = re.compile(r"hermes_server\.access: (?P<method>[A-Z]+) (?P<route>\S+) (?P<status>\d{3}) ")


@dataclass
class Server:
    """A running server: where to reach it, its key, and the PID whose memory we watch."""

    name: str
    url: str
    key: str | None
    pid: int
    stop_command: list[str] | None = None
    process: subprocess.Popen | None = None
    log: Path | None = None  # hermes-server's output, access lines included

    def log_size(self) -> int:
        """Where the log ends now (0 without one), for `refused_since`."""
        return self.log.stat().st_size if self.log is not None and self.log.exists() else 0

    def refused_since(self, offset: int) -> Counter[str]:
        """The access lines answered 4xx or 5xx that the log gained after byte `offset`, as
        "GET /api/sessions 503" counts: a run's unexpected statuses, by route and status (the
        access log names the route template, never a session's text)."""
        if self.log is None or not self.log.exists():
            return Counter()
        with self.log.open("rb") as handle:
            handle.seek(offset)
            tail = handle.read()
        found: Counter[str] = Counter()
        for line in tail.decode("utf-8", "replace").splitlines():
            access = _ACCESS.search(line)
            if access and access["status"][0] in "45":
                found[f"{access['method']} {access['route']} {access['status']}"] += 1
        return found

    def rss_kb(self) -> tuple[int, int]:
        """(current RSS, peak RSS) in kB, from /proc."""
        fields: dict[str, int] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
        return fields.get("VmRSS", 0), fields.get("VmHWM", 0)

    def stop(self) -> None:
        if self.stop_command:
            subprocess.run(self.stop_command, capture_output=True, timeout=30)
        elif self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def wait_health(url: str, process: subprocess.Popen | None, log: Path, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{url} exited with {process.returncode}; see {log}")
        try:
            if httpx.get(url + "/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up; see {log}")


def spawn(args: list[str], log: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_"))}
    env.update(extra_env or {})
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)


def start_hermes(home: Path, port: int, *extra: str) -> Server:
    """hermes-server over `home/state.db` with its defaults: echo agent, access log at info.

    Upstream, as the oracle runs it, also writes an access line per request.
    """
    log = home.parent / f"{home.name}.log"
    process = spawn([sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--host", "127.0.0.1",
                      "--port", str(port), "--api-key", HERMES_KEY, *extra], log)
    url = f"http://127.0.0.1:{port}"
    wait_health(url, process, log)
    return Server("hermes-server", url, HERMES_KEY, process.pid, process=process, log=log)


def start_profile(home: Path, port: int, version: str | None) -> Server:
    """hermes-server answering as `version` (None or 0.19.0: the default profile). The cached dataset
    is a 0.19.0 home: a newer profile adds its columns to the fresh copy first (`--migrate-home`;
    metadata-only ALTERs), as it would on any home it did not create."""
    if version is None or version == DEFAULT_VERSION:
        return start_hermes(home, port)
    return start_hermes(home, port, "--hermes-version", version, "--migrate-home")


def profiled_name(version: str) -> str:
    """The name a compared profile's hermes-server is reported under (`hermes-server@0.21.2`)."""
    return f"hermes-server@{version}"


def is_profiled(server: Server) -> bool:
    return server.name.startswith("hermes-server@")


def oracle_available(venv: Path) -> bool:
    return (venv / "bin" / "python").is_file() and (ORACLE_DIR / "start_upstream.sh").is_file()


def start_upstream(home: Path, port: int, venv: Path) -> Server:
    """Upstream's API server (adapter only) plus its mock model, via the oracle scripts."""
    env = {**os.environ, "ORACLE_VENV": str(venv), "API_SERVER_KEY": UPSTREAM_KEY}
    proc = subprocess.run([str(ORACLE_DIR / "start_upstream.sh"), str(home), str(port), str(port + 1)],
                          capture_output=True, text=True, env=env, timeout=120)
    ready = [line for line in proc.stdout.splitlines() if line.startswith("READY ")]
    if proc.returncode != 0 or not ready:
        raise RuntimeError(f"upstream did not start:\n{proc.stdout}\n{proc.stderr}")
    fields = dict(part.split("=", 1) for part in ready[0].split()[1:])
    return Server("upstream", fields["api"], fields["key"] or None, int(fields["api_pid"]),
                  stop_command=[str(ORACLE_DIR / "stop_upstream.sh"), str(home)])


def start_ceiling(answers: dict[str, dict[str, object]], work: Path, port: int) -> Server:
    """The bare Starlette app replaying `answers` (benchmarks/recording.py's, as dicts)."""
    path = work / f"ceiling-{port}.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    log = work / f"ceiling-{port}.log"
    process = spawn([sys.executable, "-m", "benchmarks.ceiling", str(path), str(port)], log)
    url = f"http://127.0.0.1:{port}"
    wait_health(url, process, log)
    return Server("ceiling", url, None, process.pid, process=process)
