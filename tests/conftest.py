"""Shared fixtures: a fresh server per test module, and a fresh one per test when needed."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.support.server import RunningServer, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One server (with a key) shared by the tests of a module; use unique ids per test."""
    home = tmp_path_factory.mktemp("home") / "hermes"
    srv = start_server(home)
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[RunningServer]:
    """A server over an empty state.db, for tests that need a known database."""
    srv = start_server(tmp_path / "hermes")
    yield srv
    srv.stop()


@pytest.fixture
def client(server: RunningServer):
    return server.client
