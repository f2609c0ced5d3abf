"""Version profiles (`serve --hermes-version`): each one on a real server, each behaviour naming
its source in /work/shared/spec/hermes-after-0.19.md (its grade [R]/[M] and section)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.http import raw_request
from tests.support.server import RunningServer, clean_env, start_server

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

NEWER = ("0.20.4", "0.21.2", "0.21.6")
OLD_401 = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}
# §1.3 "Auth 401 envelope" [M #70169; R V2 live probe, V4 probe]: no `param` key.
GATEWAY_401 = {"error": {"message": "Invalid gateway API key (API_SERVER_KEY)", "type": "gateway_auth_error",
                         "code": "gateway_auth_failed"}}


@pytest.fixture(scope="module", params=["0.19.0", *NEWER])
def profiled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("profile") / "hermes", "--hermes-version", request.param)
    srv.version = request.param  # type: ignore[attr-defined]
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("default") / "hermes")
    yield srv
    srv.stop()


def test_default_profile_is_0_19_0_unchanged(default: RunningServer) -> None:
    """§0: 0.19.0 stays the default, byte for byte (the version, the 401)."""
    health = httpx.get(f"{default.url}/health")
    assert health.content == b'{"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}'
    assert httpx.get(f"{default.url}/v1/capabilities").json() == OLD_401


def test_health_reports_the_profiles_version(profiled: RunningServer) -> None:
    """§0 timeline and §1.3 "/health is unchanged" [R V2 live /health "0.20.4", V4 probe "0.21.2"]."""
    version = profiled.version  # type: ignore[attr-defined]
    for path in ("/health", "/v1/health"):
        assert httpx.get(f"{profiled.url}{path}").json() == {"status": "ok", "platform": "hermes-agent",
                                                             "version": version}
    assert profiled.client.get("/health/detailed").json()["version"] == version


def test_env_variable_chooses_the_profile(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", env={"HERMES_SERVER_HERMES_VERSION": "0.21.2"})
    try:
        assert httpx.get(f"{srv.url}/health").json()["version"] == "0.21.2"
    finally:
        srv.stop()


def test_unknown_version_is_refused_in_one_line(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "hermes_server", "serve", "--home", str(tmp_path / "h"),
                          "--hermes-version", "0.22.0"], capture_output=True, text=True, timeout=30, env=clean_env())
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "0.19.0, 0.20.4, 0.21.2" in out.stderr and "'0.22.0'" in out.stderr


def test_401_envelope_by_profile(profiled: RunningServer) -> None:
    """§1.3 "Auth 401 envelope" [M #70169, R V2/V4]: 0.20+ answers gateway_auth_failed, no `param`."""
    expected = OLD_401 if profiled.version == "0.19.0" else GATEWAY_401  # type: ignore[attr-defined]
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        answer = httpx.get(f"{profiled.url}/api/sessions", headers=headers)
        assert answer.status_code == 401 and answer.json() == expected


def test_profile_mirrors_check_the_one_key_with_multiplexing_off(profiled: RunningServer) -> None:
    """§1.3 "Profile-scoped keys" [V1 `_expected_api_key`]: named profiles need their own key only
    with multiplexing on; with it off the routing shard's `_resolve_request_profile` (read_file id
    66604027870) ignores the prefix in 0.19 and 0.20, so `/p/<name>/…` takes the one key and refuses
    others with the profile's 401. From 0.21 (https://github.com/NousResearch/hermes-agent/pull/92871,
    merged before 0.21.0) only the server's own profile's prefix is honoured: another's route is
    404 "Unknown or unconfigured profile", before any key is checked (docs/differences.md)."""
    expected = OLD_401 if profiled.version == "0.19.0" else GATEWAY_401  # type: ignore[attr-defined]
    honoured = ("default",) if profiled.version.startswith("0.21") else ("work", "default")  # type: ignore[attr-defined]
    for name in honoured:
        assert profiled.client.get(f"/p/{name}/api/sessions").status_code == 200
        answer = httpx.get(f"{profiled.url}/p/{name}/api/sessions", headers={"Authorization": "Bearer wrong"})
        assert answer.status_code == 401 and answer.json() == expected
    if "work" not in honoured:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            answer = httpx.get(f"{profiled.url}/p/work/api/sessions", headers=headers)
            assert answer.status_code == 404 and answer.json() == {"error": "Unknown or unconfigured profile"}


@pytest.mark.parametrize("version", NEWER)
def test_gateway_401_composes_with_upstream_quirks(tmp_path: Path, version: str) -> None:
    """Both apply: the profile's 401, and 0.19.0's text/plain 500 for a non-UTF-8 bearer (D5)."""
    srv = start_server(tmp_path / "hermes", "--hermes-version", version, "--upstream-quirks")
    try:
        assert httpx.get(f"{srv.url}/api/sessions").json() == GATEWAY_401
        crashed = raw_request(srv, "GET", "/api/sessions", None, {"Authorization": b"Bearer \xff"}, auth=False)
        assert crashed.status == 500
    finally:
        srv.stop()
