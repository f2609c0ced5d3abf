"""Servers for the herm.run HTTP tests: one per module, put back to its start state per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.hermrun.support import HermRunServer, start_herm_run

# The agents most tests use (the example, plus a third version and a second agent).
AGENTS: dict[str, Any] = {"agents": [
    {"id": "agent_123", "versions": [{"id": "v1", "roles": ["readonly"]}, {"id": "v2"}, {"id": "v3"}],
     "production": "v1", "tags": {"feature-x": "v2"}},
    {"id": "agent_other"},
]}


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HermRunServer]:
    """A deterministic server whose start fixture declares AGENTS."""
    srv = start_herm_run(tmp_path_factory.mktemp("hr") / "home", "--deterministic", fixture={"herm_run": AGENTS})
    yield srv
    srv.stop()


@pytest.fixture
def hr(declared: HermRunServer) -> HermRunServer:
    """`declared`, reset to its start fixture (no sessions, no allowance used, clock rewound)."""
    declared.reset()
    return declared


@pytest.fixture(scope="module")
def bare_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HermRunServer]:
    """A deterministic server with no agents declared: any agentId is accepted."""
    srv = start_herm_run(tmp_path_factory.mktemp("hr") / "home", "--deterministic")
    yield srv
    srv.stop()


@pytest.fixture
def bare(bare_server: HermRunServer) -> HermRunServer:
    bare_server.reset()
    return bare_server
