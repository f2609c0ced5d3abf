"""/v1/capabilities of the 0.21.2 profile equals Hermes 0.21.2's own answer, in key order.

tests/fixtures/capabilities-0.21.2.json is §1.3's [R] source (the V4 probe of 0.21.2's real
handler, key set, no CORS origins, no browser extension): `runs_idempotency` after
`run_submission`, `cors` then the `browser_extension_control` object (`enabled: false`) last
among the features, and the browser-control and artifact endpoints after the session ones.
Their routes answer 501 here (tests/api/test_session_stream_runs.py); upstream advertises
them the same way while no extension is configured.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import RunningServer, start_server

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "capabilities-0.21.2.json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("caps-0.21.2") / "hermes", "--hermes-version", "0.21.2")
    yield srv
    srv.stop()


def test_capabilities_equal_the_0_21_2_probe(server: RunningServer) -> None:
    expected = json.loads(FIXTURE.read_text())
    answer = server.client.get("/v1/capabilities").json()
    assert answer == expected
    assert list(answer["features"]) == list(expected["features"])
    assert list(answer["endpoints"]) == list(expected["endpoints"])
    assert list(answer["features"]["browser_extension_control"]) == list(
        expected["features"]["browser_extension_control"])


def test_cors_keeps_its_place_and_takes_the_configured_value(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", "--hermes-version", "0.21.2", "--cors-origins", "http://localhost:3000")
    try:
        features = list(srv.client.get("/v1/capabilities").json()["features"].items())
    finally:
        srv.stop()
    assert features[-2:][0] == ("cors", True) and features[-1][0] == "browser_extension_control"


@pytest.mark.parametrize("version", ["0.19.0", "0.20.4"])
def test_older_profiles_have_no_browser_control(tmp_path: Path, version: str) -> None:
    srv = start_server(tmp_path / "hermes", "--hermes-version", version)
    try:
        body = srv.client.get("/v1/capabilities").json()
    finally:
        srv.stop()
    assert "browser_extension_control" not in body["features"] and list(body["features"])[-1] == "cors"
    assert not any(name.startswith(("browser_control", "artifact_")) for name in body["endpoints"])
