"""Where the real hermes-agent 0.19.0 is installed, for the tests that run it on our state.db,
and its own API server, for the tests that compare answers with it.

`make test` installs it into `.venv-upstream/` (cached) and names that venv in
HERMES_UPSTREAM_VENV, so there a missing venv fails the test instead of skipping it. A bare
`pytest` also finds `.venv-upstream/` or the oracle's venv, and skips with what to run when
neither exists.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.server import KEY, clean_env, free_port

REPO = Path(__file__).resolve().parents[1]
VERSION = "0.19.0"
REQUIRED = "HERMES_UPSTREAM_VENV"


def upstream_venv() -> Path | None:
    """The first venv holding hermes-agent: $HERMES_UPSTREAM_VENV, .venv-upstream/, $ORACLE_VENV."""
    named = os.environ.get(REQUIRED)
    candidates = [Path(named)] if named else [REPO / ".venv-upstream",
                                              Path(os.environ.get("ORACLE_VENV", "/tmp/hermes-oracle-venv"))]
    return next((venv for venv in candidates if (venv / "bin" / "hermes").exists()), None)


def upstream_bin(name: str = "python") -> Path:
    """A program of the upstream venv (`python`, `hermes`); fails under `make test` when it is missing."""
    venv = upstream_venv()
    if venv is not None:
        return venv / "bin" / name
    how = f"`make .venv-upstream/.installed` installs hermes-agent=={VERSION} (make test does it first)"
    if os.environ.get(REQUIRED):
        pytest.fail(f"{REQUIRED}={os.environ[REQUIRED]} holds no hermes-agent: {how}", pytrace=False)
    pytest.skip(f"no venv with hermes-agent=={VERSION}: {how}")


# Run by upstream's interpreter: the API server 0.19.0's gateway starts (its adapter, on aiohttp), on a
# loopback port, until its stdin closes.
_API_SERVER = """
import asyncio, sys
from gateway.config import PlatformConfig
from gateway.platforms.api_server import APIServerAdapter

async def main(port, key):
    adapter = APIServerAdapter(PlatformConfig(enabled=True, extra={"host": "127.0.0.1", "port": port, "key": key}))
    if not await adapter.connect():
        sys.exit("upstream's API server did not start")
    print("READY", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await adapter.disconnect()

asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
"""


@contextmanager
def upstream_api_server(home: Path, key: str = KEY) -> Iterator[int]:
    """hermes-agent 0.19.0's own API server over `home` on a free loopback port (yielded), stopped after.

    It serves with aiohttp, which 0.19.0 pins (3.14.1) in its extras: `make test` adds it to the venv."""
    python = upstream_bin("python")
    if subprocess.run([str(python), "-c", "import aiohttp"], capture_output=True).returncode != 0:
        how = "`make .venv-upstream/.installed-aiohttp` adds aiohttp==3.14.1 (make test does it first)"
        if os.environ.get(REQUIRED):
            pytest.fail(f"{REQUIRED}={os.environ[REQUIRED]} has no aiohttp for 0.19.0's API server: {how}",
                        pytrace=False)
        pytest.skip(f"no aiohttp beside hermes-agent=={VERSION}: {how}")
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = home / "upstream-api.log"
    with log.open("wb") as errors:
        proc = subprocess.Popen([str(python), "-c", _API_SERVER, str(port), key], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errors,
                                env=clean_env(HERMES_HOME=str(home), HOME=str(home)))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        deadline = time.monotonic() + 60
        while select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            line = proc.stdout.readline()
            if line.strip() == b"READY" or not line:
                break
        else:
            line = b""
        if line.strip() != b"READY":
            raise RuntimeError(f"upstream's API server did not start:\n{log.read_text(errors='replace')[-2000:]}")
        yield port
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
