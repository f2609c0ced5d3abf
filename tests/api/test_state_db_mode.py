"""A state.db hermes-server creates is its owner's alone (0600), like the key and response_store.db.

It holds every conversation; created with the umask's 0644, any local user could read them.
A state.db that already existed (Hermes's own) keeps the mode its owner gave it.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

from tests.support.server import clean_env, start_server

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed_state.db"
FILES = ("state.db", "state.db-wal", "state.db-shm")


def modes(home: Path) -> dict[str, int]:
    return {name: stat.S_IMODE((home / name).stat().st_mode) for name in FILES if (home / name).exists()}


def test_served_state_db_and_its_wal_are_0600(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    server = start_server(home)
    try:
        assert server.client.post("/api/sessions", json={"id": "s1"}).status_code == 201
        # The WAL and its index exist while the server runs, with the database's mode.
        assert modes(home) == dict.fromkeys(FILES, 0o600)
    finally:
        server.stop()
    assert modes(home)["state.db"] == 0o600


def test_seeded_state_db_is_0600(tmp_path: Path) -> None:
    home, fixture = tmp_path / "hermes", tmp_path / "f.json"
    fixture.write_text('{"sessions": [{"id": "a"}]}')
    out = subprocess.run([sys.executable, "-m", "hermes_server", "seed", str(fixture), "--home", str(home)],
                         capture_output=True, text=True, timeout=60, env=clean_env())
    assert out.returncode == 0, out.stderr
    assert set(modes(home).values()) == {0o600}


def test_an_existing_state_db_keeps_its_mode(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    home.mkdir()
    shutil.copyfile(SEED, home / "state.db")
    (home / "state.db").chmod(0o640)
    server = start_server(home)
    try:
        assert server.client.get("/api/sessions").status_code == 200
    finally:
        server.stop()
    assert modes(home)["state.db"] == 0o640
