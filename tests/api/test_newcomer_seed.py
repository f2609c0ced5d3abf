"""A rejected `seed` writes nothing, and on a fresh home that means no file either.

It once said "nothing written" and left an empty state.db behind (and the home made for it),
so the next `serve` found a database that the user never meant to create.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.server import clean_env

# A server process per test (start-up, exit status, shutdown): left out of make test-fast.
pytestmark = pytest.mark.slow


def seed(fixture: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", "seed", str(fixture), "--home", str(home)],
                          capture_output=True, text=True, timeout=60, env=clean_env())


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(document))
    return path


def test_a_rejected_seed_on_a_fresh_home_leaves_no_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = seed(write(tmp_path, {"sessions": [{"id": "b", "parent": "zzz"}]}), home)
    assert done.returncode == 1 and "unknown parent 'zzz'" in done.stderr
    assert not home.exists()


def test_a_rejected_seed_in_an_existing_empty_home_keeps_the_home_and_what_was_there(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("x: 1\n")
    done = seed(write(tmp_path, {"sessions": [{"id": "b", "parent": "zzz"}]}), home)
    assert done.returncode == 1
    assert sorted(p.name for p in home.iterdir()) == ["config.yaml"]


def test_a_rejected_herm_run_part_leaves_no_file_either(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = seed(write(tmp_path, {"sessions": [{"id": "b", "parent": "zzz"}], "herm_run": {}}), home)
    assert done.returncode == 1
    assert not home.exists()


def test_a_rejected_seed_on_a_used_home_keeps_its_state_db(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert seed(write(tmp_path, {"sessions": [{"id": "a"}]}), home).returncode == 0
    assert seed(write(tmp_path, {"sessions": [{"id": "a"}]}), home).returncode == 1
    assert (home / "state.db").is_file()
