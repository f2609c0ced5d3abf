"""A newcomer who follows the README reaches the server `make serve` started from every command it shows.

`make serve` keeps its home in the checkout (`./.hermes-home`); the README then runs
`.venv/bin/hermes-server healthcheck|seed|audit`, which once defaulted to `~/.hermes`:
`healthcheck --ready` failed with "no key file at ~/.hermes/…" and `seed` filled another home.
This test runs those commands as the README shows them, with no --home and no HERMES_HOME, in a
copy of the checkout (so the real one's `.hermes-home` is never touched) and a HOME of its own
(so a wrong default can never reach the machine's `~/.hermes`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from hermes_server.cli.keyfile import KEY_FILE
from tests.support.server import clean_env, free_port

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# `make serve` and two or three commands, each a process of its own.
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("make") is None, reason="no make on PATH")]


@dataclass
class Checkout:
    root: Path
    port: int
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`.venv/bin/hermes-server ARGS` from the checkout, as the README writes it."""
        return subprocess.run([".venv/bin/hermes-server", *args], cwd=self.root, capture_output=True, text=True,
                              timeout=60, env=self.env)

    def key(self) -> str:
        """`KEY=$(cat .hermes-home/hermes-server.key)`, the README's next line."""
        return (self.root / ".hermes-home" / KEY_FILE).read_text(encoding="utf-8").strip()


def _copy_checkout(root: Path) -> None:
    """What `make serve` and the package need, and this venv as the checkout's `.venv`."""
    for name in ("pyproject.toml", "Makefile"):
        shutil.copy2(ROOT / name, root / name)  # copy2: the venv's stamp stays newer than pyproject.toml
    shutil.copytree(ROOT / "hermes_server", root / "hermes_server", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "migrations", root / "migrations")
    (root / ".venv").symlink_to(Path(sys.prefix))


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checkout]:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a venv, so there is no .venv to run the README's commands with")
    root = tmp_path_factory.mktemp("checkout")
    _copy_checkout(root)
    user_home = tmp_path_factory.mktemp("user-home")
    port = free_port()
    # The package is imported from the copy (PYTHONPATH before the venv's editable path); the port and
    # --fixture-api (for `audit`) come from the environment, as the README's options table allows.
    env = {k: v for k, v in clean_env(API_SERVER_PORT=str(port), HERMES_SERVER_FIXTURE_API="1").items()
           if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env.update(HOME=str(user_home), PYTHONPATH=str(root))
    serve = subprocess.Popen(["make", "--no-print-directory", "-o", ".venv/.installed-runtime", "serve"], cwd=root,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
    try:
        ready = Checkout(root, port, env)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{ready.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if serve.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"make serve did not start:\n{serve.stdout.read() if serve.stdout else ''}")
            time.sleep(0.1)
        yield ready
    finally:
        os.killpg(serve.pid, signal.SIGTERM)  # make and the server it started, nothing else
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=10)


def test_the_readme_shows_the_commands_this_test_runs() -> None:
    for shown in ("make serve", "KEY=$(cat .hermes-home/hermes-server.key)", ".venv/bin/hermes-server",
                  "hermes-server healthcheck [--url URL] [--ready]", "hermes-server seed FILE",
                  "hermes-server audit [--url URL]", "API_SERVER_PORT", "HERMES_SERVER_FIXTURE_API"):
        assert shown in README, shown


def test_make_serve_keeps_its_key_in_the_checkout(checkout: Checkout) -> None:
    listed = httpx.get(f"{checkout.url}/api/sessions", headers={"Authorization": f"Bearer {checkout.key()}"})
    assert listed.status_code == 200
    assert not (Path(checkout.env["HOME"]) / ".hermes").exists()


def test_healthcheck_ready_finds_the_key_make_serve_kept(checkout: Checkout) -> None:
    done = checkout.run("healthcheck", "--ready")
    assert done.returncode == 0, done.stdout + done.stderr


def test_seed_fills_the_home_make_serve_serves(checkout: Checkout) -> None:
    (checkout.root / "fixture.json").write_text(json.dumps({"sessions": [{"id": "readme-case", "title": "Case"}]}))
    done = checkout.run("seed", "fixture.json")
    assert done.returncode == 0, done.stdout + done.stderr
    got = httpx.get(f"{checkout.url}/api/sessions/readme-case", headers={"Authorization": f"Bearer {checkout.key()}"})
    assert got.status_code == 200 and got.json()["session"]["title"] == "Case"
    assert not (Path(checkout.env["HOME"]) / ".hermes").exists()


def test_audit_asks_the_server_with_the_key_make_serve_kept(checkout: Checkout) -> None:
    done = checkout.run("audit")
    assert done.returncode == 0, done.stdout + done.stderr
