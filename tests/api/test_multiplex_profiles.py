"""Profile multiplexing on real server processes (0.21.6,
https://github.com/NousResearch/hermes-agent/pull/112854): a home holding named profiles serves
each under `/p/<name>/` with its own state.db and the key of its own `.env`; a run is seen only
through its own profile (https://github.com/NousResearch/hermes-agent/pull/101256); a profile not
served answers 404 "Unknown or unconfigured profile"
(https://github.com/NousResearch/hermes-agent/pull/92871), as 0.21.2 answers any profile but its own.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import KEY, RunningServer, start_server

pytestmark = pytest.mark.slow

BETA_KEY = "beta-profile-key-0123456789"
UNKNOWN = {"error": "Unknown or unconfigured profile"}


def _home(tmp_path: Path) -> Path:
    """A default home with two named profiles: `beta` (a key of its own) and `gamma` (too short a key),
    and two directories that are not profiles."""
    home = tmp_path / "home"
    for name, env in (("beta", f"API_SERVER_KEY={BETA_KEY}\n"), ("gamma", "API_SERVER_KEY=short\n"),
                      ("Not_A_Profile", ""), ("default", "")):
        (home / "profiles" / name).mkdir(parents=True)
        (home / "profiles" / name / ".env").write_text(env, encoding="utf-8")
    return home


def _as(server: RunningServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture(scope="module")
def multiplexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_server(_home(tmp_path_factory.mktemp("multiplex")), "--hermes-version", "0.21.6", in_process=False)
    yield server
    assert server.stop() == 0  # every profile's app stopped cleanly


def _ids(client: httpx.Client, path: str) -> set[str]:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text
    return {row["id"] for row in answer.json()["data"]}


def test_each_profile_has_its_own_state_db(multiplexed: RunningServer) -> None:
    default, beta = multiplexed.client, _as(multiplexed, BETA_KEY)
    assert default.post("/api/sessions", json={"id": "in-default"}).status_code == 201
    assert beta.post("/p/beta/api/sessions", json={"id": "in-beta"}).status_code == 201
    assert _ids(default, "/api/sessions") == {"in-default"} == _ids(default, "/p/default/api/sessions")
    assert _ids(beta, "/p/beta/api/sessions") == {"in-beta"}
    with sqlite3.connect(multiplexed.home / "profiles" / "beta" / "state.db") as conn:
        assert [row[0] for row in conn.execute("SELECT id FROM sessions")] == ["in-beta"]
    conn.close()
    assert beta.get("/p/beta/health").json()["version"] == "0.21.6"


def test_each_profile_takes_its_own_key_only(multiplexed: RunningServer) -> None:
    default, beta = multiplexed.client, _as(multiplexed, BETA_KEY)
    for client, path in ((default, "/p/beta/api/sessions"), (beta, "/api/sessions"), (beta, "/p/default/api/sessions")):
        refused = client.get(path)
        assert refused.status_code == 401, path
        assert refused.json()["error"]["code"] == "gateway_auth_failed"


def test_a_profile_without_a_key_of_its_own_fails_closed(multiplexed: RunningServer) -> None:
    for key in ("short", KEY, BETA_KEY):
        assert _as(multiplexed, key).get("/p/gamma/api/sessions").status_code == 401
    assert httpx.get(multiplexed.url + "/p/gamma/health", timeout=10).status_code == 200
    assert "profile gamma has no API_SERVER_KEY of its own" in multiplexed.log()


def test_a_profile_not_served_is_unknown(multiplexed: RunningServer) -> None:
    for name in ("nobody", "Not_A_Profile"):
        answer = httpx.get(f"{multiplexed.url}/p/{name}/api/sessions", timeout=10)  # no key needed to hear it
        assert (answer.status_code, answer.json()) == (404, UNKNOWN)
    unrouted = httpx.get(multiplexed.url + "/p/nobody/api/nothing-here", timeout=10)
    assert (unrouted.status_code, unrouted.text) == (404, "404: Not Found")


def test_a_run_is_seen_through_its_own_profile_only(multiplexed: RunningServer) -> None:
    beta = _as(multiplexed, BETA_KEY)
    submitted = beta.post("/p/beta/v1/runs", json={"input": "hello"})
    assert submitted.status_code == 202
    run_id = submitted.json()["run_id"]
    assert beta.get(f"/p/beta/v1/runs/{run_id}").status_code == 200
    missing = multiplexed.client.get(f"/v1/runs/{run_id}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "run_not_found"


def test_the_start_says_what_it_multiplexes(multiplexed: RunningServer) -> None:
    assert "profiles beta, gamma under /p/<name>/" in multiplexed.log()


def test_0_21_2_serves_only_its_own_profile(tmp_path: Path) -> None:
    server = start_server(_home(tmp_path), "--hermes-version", "0.21.2", in_process=False)
    try:
        assert server.client.get("/p/default/api/sessions").status_code == 200
        answer = server.client.get("/p/beta/api/sessions")
        assert (answer.status_code, answer.json()) == (404, UNKNOWN)
    finally:
        server.stop()


def test_a_named_profiles_own_running_gateway_keeps_the_server_standalone(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "profiles" / "beta" / "gateway.pid").write_text(str(os.getpid()), encoding="utf-8")
    server = start_server(home, "--hermes-version", "0.21.6", in_process=False)
    try:
        assert "profile beta runs a gateway of its own" in server.log()
        answer = server.client.get("/p/beta/api/sessions")
        assert (answer.status_code, answer.json()) == (404, UNKNOWN)
    finally:
        server.stop()
