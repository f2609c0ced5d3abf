"""The refusal of an older state.db names a command that really migrates it, and it works.

"Open it once with any `hermes` command" sent users to `hermes --version`, which does not
open state.db at all, so the server refused the file again. Here the advice is followed to
the letter with real hermes-agent 0.19.0's CLI, and hermes-server then serves the file.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from hermes_server.domain.errors import SchemaMismatch
from hermes_server.store.migrate import SCHEMA_VERSION, check_existing
from tests.support.server import clean_env, start_server
from tests.support.upstream import upstream_bin

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed_state.db"


def old_home(tmp_path: Path) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    shutil.copyfile(SEED, home / "state.db")
    with sqlite3.connect(home / "state.db") as conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION - 1,))
    return home


def version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])


def advised_command(home: Path) -> list[str]:
    with pytest.raises(SchemaMismatch) as refused:
        check_existing(home / "state.db")
    commands = re.findall(r"`(hermes [^`]+)`", str(refused.value))
    assert len(commands) == 1, f"the advice names no single `hermes …` command: {refused.value}"
    return shlex.split(commands[0])


def run_upstream(home: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    user_home = home.parent / "user-home"
    user_home.mkdir(exist_ok=True)
    env = clean_env(HERMES_HOME=str(home), HOME=str(user_home), NO_COLOR="1", COLUMNS="200")
    return subprocess.run([str(upstream_bin("hermes")), *argv[1:]], capture_output=True, text=True,
                          timeout=120, env=env, stdin=subprocess.DEVNULL)


def test_the_advice_names_hermes_sessions_list(tmp_path: Path) -> None:
    assert advised_command(old_home(tmp_path)) == ["hermes", "sessions", "list"]


def test_following_the_advice_migrates_and_then_the_server_serves_it(tmp_path: Path) -> None:
    home = old_home(tmp_path)
    argv = advised_command(home)
    out = run_upstream(home, argv)
    assert out.returncode == 0, out.stdout + out.stderr
    assert version(home / "state.db") == SCHEMA_VERSION
    server = start_server(home)
    try:
        assert server.client.get("/api/sessions").status_code == 200
    finally:
        server.stop()


def test_hermes_version_alone_does_not_migrate(tmp_path: Path) -> None:
    """Why the advice must name the command: not every `hermes` command opens state.db."""
    home = old_home(tmp_path)
    assert run_upstream(home, ["hermes", "--version"]).returncode == 0
    assert version(home / "state.db") == SCHEMA_VERSION - 1
