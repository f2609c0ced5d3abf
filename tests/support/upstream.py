"""Where the real hermes-agent 0.19.0 is installed, for the tests that run it on our state.db.

`make test` installs it into `.venv-upstream/` (cached) and names that venv in
HERMES_UPSTREAM_VENV, so there a missing venv fails the test instead of skipping it. A bare
`pytest` also finds `.venv-upstream/` or the oracle's venv, and skips with what to run when
neither exists.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
