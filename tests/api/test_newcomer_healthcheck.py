"""`healthcheck --ready` says which key it sent, and takes `--api-key` / `--home` as `serve` does.

Run outside `make cli` it once said only "status 401": it had looked for the key in ~/.hermes,
found none, and did not say so.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_server.cli.keyfile import KEY_FILE
from tests.support.server import KEY, RunningServer, clean_env, start_server

# A server process per test (start-up, exit status, shutdown): left out of make test-fast.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("hc") / "home")
    try:
        yield srv
    finally:
        srv.stop()


def ready(server: RunningServer, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", "healthcheck", "--ready", "--url", server.url, *args],
                          capture_output=True, text=True, timeout=60, env={**clean_env(), **(env or {})})


def test_no_key_found_is_said_with_where_it_looked(server: RunningServer, tmp_path: Path) -> None:
    done = ready(server, "--home", str(tmp_path))
    assert done.returncode == 1
    assert "status 401" in done.stderr
    assert (f"(sent no key: none given (--api-key, API_SERVER_KEY) and no key file at {tmp_path / KEY_FILE})"
            in done.stderr)


def test_the_api_key_flag_is_sent_and_named_never_shown(server: RunningServer, tmp_path: Path) -> None:
    assert ready(server, "--api-key", KEY, "--home", str(tmp_path)).returncode == 0
    wrong = ready(server, "--api-key", "not-the-key-0123456789")
    assert wrong.returncode == 1 and "(sent the key from --api-key)" in wrong.stderr
    assert "not-the-key-0123456789" not in wrong.stderr


def test_the_environment_key_is_named(server: RunningServer) -> None:
    assert ready(server, env={"API_SERVER_KEY": KEY}).returncode == 0
    wrong = ready(server, env={"API_SERVER_KEY": "wrong-key-0123456789"})
    assert wrong.returncode == 1 and "(sent the key from API_SERVER_KEY)" in wrong.stderr


def test_the_key_kept_in_home_is_found_by_home_and_named(server: RunningServer, tmp_path: Path) -> None:
    (tmp_path / KEY_FILE).write_text(KEY + "\n")
    assert ready(server, "--home", str(tmp_path)).returncode == 0
    (tmp_path / KEY_FILE).write_text("wrong-key-0123456789\n")
    wrong = ready(server, env={"HERMES_HOME": str(tmp_path)})
    assert wrong.returncode == 1 and f"(sent the key kept in {tmp_path / KEY_FILE})" in wrong.stderr
