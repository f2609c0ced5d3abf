"""pytest plugin: run the API tests against upstream hermes-agent 0.19.0 instead of hermes-server.

It checks the tests themselves: an expectation that the real provider does not meet is
either a declared deviation (D1–D6, which these tests name) or a wrong test.

    PYTHONPATH=tools .venv/bin/python -m pytest -p pytest_oracle -q tests/api/test_list.py ...

Every `start_server(...)` of the test modules and conftest starts the oracle instead
(`../shared/oracle/start_upstream.sh`, ports 18830–18849, a fresh HERMES_HOME each time),
with the same key the tests send. Rows the tests write with SQL go into the oracle's
state.db, which it reads without caching. Tests of hermes-server's own process (CLI,
storage, shutdown) are not meaningful here.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracle_common import ORACLE_DIR, stop_oracle
from tests.support.server import KEY, RunningServer

_PORTS = itertools.count(18830, 2)


class _OracleProcess:
    """Stands in for the Popen of a hermes-server: stopping it runs stop_upstream.sh."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int = signal.SIGTERM) -> None:
        stop_oracle(self.home)
        self.returncode = 0

    def wait(self, timeout: float | None = None) -> int:
        return 0

    def kill(self) -> None:
        self.send_signal()


def start_oracle(home: Path, *extra: str, key: str | None = KEY, **_: Any) -> RunningServer:
    """start_server's signature; `extra` hermes-server flags have no upstream meaning and are ignored."""
    port = next(_PORTS)
    if port > 18848:
        raise RuntimeError("out of oracle ports (18830-18849): run fewer test modules at once")
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "API_SERVER_KEY": key or ""}
    if key is None:
        env["ORACLE_NO_KEY"] = "1"
    out = subprocess.run([str(ORACLE_DIR / "start_upstream.sh"), str(home), str(port), str(port + 1)],
                         env=env, capture_output=True, text=True, timeout=120)
    if "READY" not in out.stdout:
        raise RuntimeError(f"oracle did not start:\n{out.stdout}\n{out.stderr}")
    return RunningServer(home, port, key, _OracleProcess(home), home / "oracle" / "api.log")  # type: ignore[arg-type]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Point every imported `start_server` name (conftest and test modules) at the oracle."""
    for name, module in list(sys.modules.items()):
        if name.startswith("tests.") and hasattr(module, "start_server"):
            module.start_server = start_oracle
