"""Where the real hermes-agent 0.19.0 is installed, for the tests that run it on our state.db,
and whether it can run its own API server (tests/support/upstream_api.py starts that).

`make test` installs it into `.venv-upstream/` (cached) and names that venv in
HERMES_UPSTREAM_VENV, so there a missing venv fails the test instead of skipping it. A bare
`pytest` also finds `.venv-upstream/` or the oracle's venv, and skips with what to run when
neither exists.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
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


def require_api_server() -> Path:
    """The upstream venv's python, once it can run 0.19.0's API server: that needs aiohttp, which
    0.19.0 pins (3.14.1) in its extras and `make test` adds to the venv."""
    python = upstream_bin("python")
    if subprocess.run([str(python), "-c", "import aiohttp"], capture_output=True).returncode != 0:
        how = "`make .venv-upstream/.installed-aiohttp` adds aiohttp==3.14.1 (make test does it first)"
        if os.environ.get(REQUIRED):
            pytest.fail(f"{REQUIRED}={os.environ[REQUIRED]} has no aiohttp for 0.19.0's API server: {how}",
                        pytrace=False)
        pytest.skip(f"no aiohttp beside hermes-agent=={VERSION}: {how}")
    return python
