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

from tests.support.server import clean_env, free_port

# A server process per test (start-up, exit status, shutdown): left out of make test-fast.
pytestmark = pytest.mark.slow

# Bound and let go again: each refusal below comes before serving. A free one, since the socket is
# bound before anything else is checked (so that a port in use leaves the home as it was).
PORT = str(free_port())


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


def _entries(home: Path) -> dict[str, bytes]:
    return {entry.name: entry.read_bytes() for entry in sorted(home.iterdir())} if home.exists() else {}


@pytest.mark.parametrize("fresh", [True, False], ids=["fresh-home", "used-home"])
def test_a_start_on_a_port_in_use_leaves_the_home_as_it_was(tmp_path: Path, fresh: bool) -> None:
    """Once it wrote the key file and response_store.db, then found the port taken."""
    import socket

    home = tmp_path / "home"
    if not fresh:
        home.mkdir()
        (home / "notes.txt").write_text("mine")
    before = _entries(home)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = run("serve", "--home", str(home), "--port", str(taken.getsockname()[1]))
    assert done.returncode == 2 and "address already in use" in done.stderr, done.stderr
    assert home.exists() is not fresh and _entries(home) == before


def test_a_start_with_an_unusable_agent_leaves_the_home_as_it_was(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = run("serve", "--home", str(home), "--port", PORT, "--agent", "script", "--hermes-version", "0.21.2")
    assert done.returncode == 2 and "--agent-script" in done.stderr, done.stderr
    assert _entries(home) == {}
