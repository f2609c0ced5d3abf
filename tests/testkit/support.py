"""Run pytest in a subprocess on generated test files, the way a connector's suite runs the plugin.

Each run gets its own TMPDIR, so "no directory left behind" is checked exactly, and an
environment without this suite's pytest, xdist or hermes-server variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from hermes_server.testkit.process import DIR_PREFIX


@dataclass
class Run:
    returncode: int
    output: str
    seconds: float
    tmpdir: Path

    def leftovers(self) -> list[Path]:
        """Server directories the run left in its TMPDIR."""
        return sorted(self.tmpdir.glob(f"{DIR_PREFIX}*"))


REPO = Path(__file__).resolve().parents[2]


def inner_env(tmpdir: Path, *, checkout: bool = False) -> dict[str, str]:
    """This environment without this suite's variables; with `checkout`, this checkout's package
    first on the path (the installed one may be another checkout's: a worktree's, say)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "HERMES_", "API_SERVER_", "COV_")) and k != "PYTHONPATH"}
    env["TMPDIR"] = str(tmpdir)
    if checkout:
        env["PYTHONPATH"] = str(REPO)
    return env


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def run_pytest(root: Path, files: dict[str, str], *args: str, python: str = sys.executable,
               timeout: float = 120.0) -> Run:
    """Write `files` under `root` and run `python -m pytest` there (no cache, our own TMPDIR), with
    this checkout's hermes-server when `python` is this interpreter (else the one installed there)."""
    write_files(root, files)
    tmpdir = root / "tmp"
    tmpdir.mkdir(exist_ok=True)
    started = time.perf_counter()
    env = inner_env(tmpdir, checkout=python == sys.executable)
    out = subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args], cwd=root, check=False,
                         capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return Run(out.returncode, out.stdout + out.stderr, time.perf_counter() - started, tmpdir)


def pid_gone(pid: int) -> bool:
    """No such process, or only its zombie (an orphan waits for whoever adopted it to reap it)."""
    proc = Path("/proc")
    if proc.is_dir():
        try:
            return "State:\tZ" in (proc / str(pid) / "status").read_text()
        except FileNotFoundError:
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if pid_gone(pid):
            return True
        time.sleep(0.05)
    return False


def outcomes(output: str) -> dict[str, str]:
    """Test name -> PASSED/FAILED, from `-rA`'s short summary."""
    found = {}
    for line in output.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR") and "::" in rest:
            found[rest.split("::")[1].split(" ")[0]] = word
    return found
