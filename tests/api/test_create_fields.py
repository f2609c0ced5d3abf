"""0.20+'s `POST /api/sessions` `source` and `model`, on a real server, each behaviour naming its source in
/work/shared/spec/hermes-after-0.19.md: §1.4 "POST /api/sessions (changed)" [R V2 §B.3; V2 §B.2 `model`]."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.db import session_row
from tests.support.server import RunningServer, start_server

# Contract tests: servers on a thread of the test process (tests/support/inprocess.py).
pytestmark = pytest.mark.in_process

MODEL = "hermes-agent"


@pytest.fixture(scope="module", params=["0.20.4", "0.21.2"])
def newer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("create") / "hermes", "--hermes-version", request.param)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("old") / "hermes")
    yield srv
    srv.stop()


def _create(server: RunningServer, session_id: str, **body: Any) -> dict[str, Any]:
    answer = server.client.post("/api/sessions", json={"id": session_id, **body})
    assert answer.status_code == 201, answer.text
    session: dict[str, Any] = answer.json()["session"]
    return session


def test_0_19_0_stores_api_server_and_the_alias(old: RunningServer) -> None:
    """§1.4: 0.19.0 always stored `api_server` and `model = body.model or --model-name`."""
    session = _create(old, "old-src", source="desktop")
    assert session["source"] == "api_server" and session["model"] == MODEL
    assert _create(old, "old-model", model="openai/gpt-5")["model"] == "openai/gpt-5"


@pytest.mark.parametrize(("sent", "stored"), [
    ("desktop", "desktop"), ("cli", "cli"), ("telegram", "telegram"), ("discord", "discord"), ("slack", "slack"),
    ("dashboard", "dashboard"), ("hermes_browser", "hermes_browser"), ("browser", "hermes_browser"),
    ("api_server", "api_server"), ("raycast", "api_server"), ("", "api_server"), (5, "api_server"),
    (None, "api_server"), (" Desktop ", "desktop"),
])
def test_source_is_normalised(newer: RunningServer, sent: Any, stored: str) -> None:
    """V2 §B.3 (`_normalize_session_source`): the allowed set, `browser` → `hermes_browser`, anything else
    `api_server`."""
    sid = f"src-{abs(hash(repr(sent)))}"
    assert _create(newer, sid, source=sent)["source"] == stored
    assert session_row(newer.db_path, sid)["source"] == stored


def test_the_virtual_alias_is_not_stored(newer: RunningServer) -> None:
    """V2 §B.3/§B.2: `{}` → `model: null`; the alias, bare or provider-prefixed, is not persisted."""
    for sid, body in (("alias-none", {}), ("alias-bare", {"model": MODEL}), ("alias-prefixed", {"model": f"echo::{MODEL}"}),
                      ("alias-id", {"model_id": MODEL})):
        assert _create(newer, sid, **body)["model"] is None, sid
        assert session_row(newer.db_path, sid)["model"] is None


def test_a_real_model_is_stored(newer: RunningServer) -> None:
    """V2 §B.3: `model`/`model_id`, the `provider::model` form giving the model."""
    assert _create(newer, "model-real", model="openai/gpt-5")["model"] == "openai/gpt-5"
    assert _create(newer, "model-id", model_id="anthropic::claude")["model"] == "claude"
    assert _create(newer, "model-odd", model=5)["model"] is None


def test_fork_keeps_api_server(newer: RunningServer) -> None:
    """V2 §B.8: the fork's source is hard-coded `api_server`, whatever the parent's."""
    _create(newer, "fork-parent", source="desktop")
    answer = newer.client.post("/api/sessions/fork-parent/fork", json={"id": "fork-child"})
    assert answer.status_code == 201 and answer.json()["session"]["source"] == "api_server"
