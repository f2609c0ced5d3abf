"""A home that is a regular file is named as such, and a terminal is told plainly once.

The log once said only `File exists (FileExistsError)` (what mkdir says of a file in the way).
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.server import clean_env, start_server

# A server process per test (start-up, exit status, shutdown): left out of make test-fast.
pytestmark = pytest.mark.slow

PORT = 19654


def test_the_log_says_the_home_is_a_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("in the way")
    server = start_server(home)
    try:
        assert server.client.get("/api/sessions").status_code == 503  # still serving, for the container
        assert f"{home} is a file, not a directory" in server.log()
        assert "File exists" not in server.log()
    finally:
        server.stop()


@pytest.mark.parametrize("version", ["0.19.0", "0.21.2"])
def test_the_start_says_it_in_one_line(tmp_path: Path, version: str) -> None:
    """One warning at start for an unusable home, not one more per side file (response_store.db,
    0.21.2's runs_idempotency.db) that the same home cannot hold either."""
    home = tmp_path / "home"
    home.write_text("in the way")
    server = start_server(home, "--hermes-version", version)
    try:
        assert server.client.get("/api/sessions").status_code == 503
    finally:
        server.stop()
    warnings = [line for line in server.log().splitlines() if " WARNING " in line or " ERROR " in line]
    assert len(warnings) == 1 and "is a file, not a directory" in warnings[0], warnings
    assert "Traceback" not in server.log()


def test_a_parent_that_is_a_file_is_named(tmp_path: Path) -> None:
    from hermes_server.store.home_check import plainly, probe

    (tmp_path / "f").write_text("x")
    problem = probe(tmp_path / "f" / "home")
    assert problem is not None and plainly(problem, tmp_path / "f" / "home") == f"{tmp_path / 'f'} is a file, not a directory"


def test_a_terminal_is_told_once_that_nothing_will_work(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("in the way")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hermes_server", "serve", "--home", str(home), "--no-auth",
                             "--port", str(PORT)], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                            env=clean_env())
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while b"serving http://" not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                try:
                    seen += os.read(leader, 65536)
                except OSError:
                    break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(leader)
    text = seen.decode(errors="replace")
    assert "serving http://" in text
    assert text.count("nothing will work until this is fixed") == 1
    assert f"{home} is a file, not a directory" in text


def test_without_a_terminal_the_log_line_alone_says_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_text("in the way")
    server = start_server(home, in_process=False)
    try:
        assert "nothing will work until this is fixed" not in server.log()
    finally:
        server.stop()
