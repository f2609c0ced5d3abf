"""What the side-by-side comparisons with upstream 0.19.0 (`tools/oracle_*diff.py`) share.

The scenarios, their normalisation and the player are the package's contract corpus
(`hermes_server/contract/`); the tools only start the servers and judge the differences:

- Processes: the oracle (`../shared/oracle/start_upstream.sh`) and hermes-server, each on
  a fresh home inside one temporary `Workbench`, all stopped (by PID) when it closes.
- Judging: a step must answer alike on both, unless it names a deviation of
  docs/differences.md (none with `--upstream-quirks`), which must show, and show alone.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hermes_server.contract.masks import Normaliser, decoded_body
from hermes_server.contract.play import Shaped, Side, play, shape
from hermes_server.contract.rows import DEVIATIONS
from hermes_server.contract.steps import ORACLE_MEETS, Names, Step
from hermes_server.contract.suites import Suite
from hermes_server.contract.wire import exchange, local

REPO = Path(__file__).resolve().parent.parent
ORACLE_DIR = Path(os.environ.get("HERMES_ORACLE_DIR", REPO.parent / "shared" / "oracle"))
ORACLE_PY = Path(os.environ.get("ORACLE_VENV", "/tmp/hermes-oracle-venv")) / "bin" / "python"
KEY = "oracle-test-key-0123456789abcdef"


def rebased(ports: dict[Any, int]) -> dict[Any, int]:
    """A tool's fixed ports, moved so the lowest is HERMES_DIFF_PORT_BASE when that is set
    (several people comparing at once each keep to their own port range)."""
    base = os.environ.get("HERMES_DIFF_PORT_BASE", "").strip()
    if not base:
        return ports
    shift = int(base) - min(ports.values())
    return {name: port + shift for name, port in ports.items()}


def command_line(description: str) -> argparse.ArgumentParser:
    """The options every comparison takes (a tool may add its own)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="also list the identical answers")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes and logs")
    parser.add_argument("--upstream-quirks", action="store_true",
                        help="start hermes-server with --upstream-quirks and expect no deviation at all")
    return parser


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
            if exchange(local(port), "GET", "/health", timeout=60).status == 200:
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


# -- playing and judging ------------------------------------------------------------


def side(name: str, ports: dict[tuple[str, str], int], no_key: Iterable[str] = ("nokey",)) -> Side:
    """One side of a comparison: its server per (pair, agent), KEY on every pair but those without one."""
    return Side(name, {where: local(port) for where, port in ports.items()},
                {pair: None if pair in no_key else KEY for pair, _ in ports})


def steps_of(suite: Suite) -> list[Step]:
    """The suite's scenarios on fresh homes (no prefix), all of those a comparison with the oracle can play."""
    return [step for step in suite.scenarios(Names()) if step.needs <= ORACLE_MEETS]


def played(suite: Suite, oracle: Side, ours: Side, normalisers: dict[str, Normaliser] | None = None) -> list[Shaped]:
    """Every step on the oracle, then on ours; each side's answers in its own normalised form
    (`normalisers` by side name, when the tool reads their tallies afterwards)."""
    def retried(group: str, attempt: int) -> None:
        print(f"retried   {group} group: a run had settled before its live step (attempt {attempt})")

    answers = play(steps_of(suite), [oracle, ours], on_retry=retried)
    return shape(answers, normalisers or {oracle.name: suite.normaliser(), ours.name: suite.normaliser()})


def verdict(step: Step, a: dict[str, Any], b: dict[str, Any], ours_raw: Any, quirks: bool) -> str:
    """`same`, `expected` (the step's deviation, and nothing else), `unexpected`, `unexercised` (a
    deviation that did not show) or `wrong` (it showed, but not as hermes-server declares it)."""
    deviation = None if quirks else step.deviation
    if deviation is None:
        return "same" if a == b else "unexpected"
    if a == b:
        return "unexercised"
    only = DEVIATIONS[deviation].only
    if only is not None and not only(a, b):
        return "unexpected"
    if step.declared is not None and ours_raw != step.declared:
        return "wrong"
    return "expected"


def judge(shaped: Sequence[Shaped], quirks: bool, verbose: bool, width: int = 700) -> Counter[str]:
    """Each step's verdict, printed unless identical (or always with `verbose`); the tally, with
    `expected D<n>` per deviation."""
    tally: Counter[str] = Counter()
    for item in shaped:
        a, b = item.shapes["oracle"], item.shapes["ours"]
        ours = item.answers["ours"]
        found = verdict(item.step, a, b, (ours.status, decoded_body(ours.body)), quirks)
        tally[found] += 1
        step = item.step
        if found == "expected":
            tally[f"expected {step.deviation}"] += 1
        if found == "same":
            if verbose:
                print(f"same      {step.name}")
            continue
        label = {"expected": f"expected  {step.deviation}", "unexpected": "DIFF     ",
                 "unexercised": "NO-DIFF  ", "wrong": f"WRONG-{step.deviation}"}[found]
        print(f"{label} {step.name}" + (f": expected {step.deviation} to differ" if found == "unexercised" else ""))
        if found == "wrong":
            print(f"  declared: {step.declared}\n  ours:     {(ours.status, decoded_body(ours.body))}")
        if found != "unexercised" and (found != "expected" or verbose or step.declared is not None):
            print_differences(a, b, width)
    return tally


def print_differences(a: dict[str, Any], b: dict[str, Any], width: int) -> None:
    """Each field of two normalised answers that differs, oracle first, cut at `width`; a body
    kept as JSON text (the session routes) as a line diff."""
    for key in sorted(set(a) | set(b)):
        if a.get(key) == b.get(key):
            continue
        if key == "body" and isinstance(a.get(key), str) and isinstance(b.get(key), str):
            try:
                lines = difflib.unified_diff(json.dumps(json.loads(a[key]), indent=1).splitlines(),
                                             json.dumps(json.loads(b[key]), indent=1).splitlines(),
                                             "oracle", "ours", n=2, lineterm="")
                print("\n".join("  " + line for line in list(lines)[:60]))
                continue
            except ValueError:
                pass
        print(f"  {key}:\n    oracle: {json.dumps(a.get(key))[:width]}\n    ours:   {json.dumps(b.get(key))[:width]}")
