"""`serve --fixture` on a fresh home refuses a bad fixture as `seed` does: before anything is bound.

A fixture whose only problem was an unknown parent once passed the pre-start check (it looked
at state.db only when the file existed), so the server printed "serving http://…", then a
hint to "start on a fresh --home" (the home was fresh), then exited 3, not 2; with several
problems the report left out the unknown parent that `seed` listed.
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

PORT = "19651"  # never bound: the refusal comes first


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_server", *args], capture_output=True, text=True,
                          timeout=60, env=clean_env())


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(document))
    return path


def problem_lines(text: str) -> list[str]:
    return sorted(line.strip() for line in text.splitlines() if line.strip().startswith("$."))


def test_an_unknown_parent_on_a_fresh_home_is_refused_before_serving(tmp_path: Path) -> None:
    fixture = write(tmp_path, {"sessions": [{"id": "b", "parent": "zzz"}]})
    home = tmp_path / "home"
    done = run("serve", "--fixture", str(fixture), "--home", str(home), "--port", PORT, "--no-auth")
    assert done.returncode == 2, done.stderr
    assert "serving http://" not in done.stdout + done.stderr
    assert "$.sessions[0].parent: unknown parent 'zzz'" in done.stderr
    assert "fresh --home" not in done.stderr  # it is fresh: the hint would be false
    assert not (home / "state.db").exists()


def test_the_start_up_report_lists_what_seed_lists(tmp_path: Path) -> None:
    fixture = write(tmp_path, {"sessions": [{"id": "b", "parent": "zzz"},
                                            {"id": "c", "messages": [{"content": "x"}]}]})
    served = run("serve", "--fixture", str(fixture), "--home", str(tmp_path / "a"), "--port", PORT, "--no-auth")
    seeded = run("seed", str(fixture), "--home", str(tmp_path / "b"))
    assert (served.returncode, seeded.returncode) == (2, 1)
    assert len(problem_lines(seeded.stderr)) == 2
    assert problem_lines(served.stderr) == problem_lines(seeded.stderr)


def test_the_fresh_home_hint_stays_when_state_db_holds_the_clash(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run("seed", str(write(tmp_path, {"sessions": [{"id": "a"}]})), "--home", str(home)).returncode == 0
    fixture = write(tmp_path, {"sessions": [{"id": "a", "title": "t"}, {"id": "z"}]})
    done = run("serve", "--fixture", str(fixture), "--home", str(home), "--port", PORT, "--no-auth")
    assert done.returncode == 2, done.stderr
    assert "already exists in state.db" in done.stderr and "fresh --home" in done.stderr


def test_a_refused_start_leaves_a_fresh_home_absent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    fixture = write(tmp_path, {"sessions": [{"id": "b", "parent": "zzz"}]})
    done = run("serve", "--fixture", str(fixture), "--home", str(home), "--port", PORT)
    assert done.returncode == 2 and "generated API key" not in done.stdout + done.stderr
    assert not home.exists()  # no key file kept for a server that never started
