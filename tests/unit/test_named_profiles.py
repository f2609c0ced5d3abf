"""The named profiles a multiplexing 0.21.6 server finds (cli/profiles.py;
https://github.com/NousResearch/hermes-agent/pull/112854)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hermes_server.cli.profiles import named_homes, own_key, running_gateway

KEY = "a-profile-key-0123456789"


def test_named_profiles_are_directories_with_profile_ids(tmp_path: Path) -> None:
    for name in ("beta", "a-b_c", "9lives", "default", "Upper", "-dash", "x" * 65):
        (tmp_path / "profiles" / name).mkdir(parents=True)
    (tmp_path / "profiles" / "file").write_text("", encoding="utf-8")
    assert [name for name, _ in named_homes(tmp_path)] == ["9lives", "a-b_c", "beta"]
    assert named_homes(tmp_path / "nowhere") == []


def test_a_profiles_key_is_its_own_dotenv_key(tmp_path: Path) -> None:
    home = tmp_path / "beta"
    home.mkdir()
    assert own_key(home, {}, None) is None  # no .env
    (home / ".env").write_text(f"export API_SERVER_KEY='{KEY}'\n", encoding="utf-8")
    assert own_key(home, {"API_SERVER_KEY": "from-the-environment-0123"}, None) == KEY
    assert own_key(home, {}, KEY) is None  # the default profile's key is not its own
    (home / ".env").write_text("API_SERVER_KEY=too-short\n", encoding="utf-8")
    assert own_key(home, {}, None) is None
    (home / ".env").write_text("API_SERVER_KEY=${BASE}-0123456789\n", encoding="utf-8")
    assert own_key(home, {"BASE": "expanded"}, None) == "expanded-0123456789"


def test_a_named_profiles_running_gateway_is_found_by_its_pid_file(tmp_path: Path) -> None:
    beta, gamma = tmp_path / "beta", tmp_path / "gamma"
    beta.mkdir()
    gamma.mkdir()
    profiles = [("beta", beta), ("gamma", gamma)]
    assert running_gateway(profiles) is None
    (beta / "gateway.pid").write_text("not a pid", encoding="utf-8")
    (gamma / "gateway.pid").write_text(json.dumps({"pid": os.getppid()}), encoding="utf-8")
    assert running_gateway(profiles) == "gamma"
    (gamma / "gateway.pid").write_text(str(2**22 + 12345), encoding="utf-8")  # no such process
    assert running_gateway(profiles) is None
