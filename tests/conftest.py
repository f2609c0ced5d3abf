"""Shared fixtures: a fresh server per test module, and a fresh one per test when needed.

A module marked `pytestmark = pytest.mark.in_process` gets its servers in process
(tests/support/server.py says when that is right); every other module gets subprocesses.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import Lane, RunningServer, start_server


def _module_lane(node: pytest.Module | None) -> bool:
    return ((node is not None and node.get_closest_marker("in_process") is not None)
            or os.environ.get("HERMES_TESTS_LANE") == "in_process")


@pytest.fixture(scope="module", autouse=True)
def _server_lane(request: pytest.FixtureRequest) -> Iterator[None]:
    """The module's lane for `start_server`, set before any of its fixtures start a server
    (`HERMES_TESTS_LANE=in_process` puts every module in process: a way to find candidates)."""
    Lane.in_process = _module_lane(request.node)
    yield
    Lane.in_process = False


@pytest.fixture(autouse=True)
def _test_lane(request: pytest.FixtureRequest, _server_lane: None) -> Iterator[None]:
    """A test marked `subprocess` in an in-process module starts its own servers as subprocesses."""
    module_lane = _module_lane(request.node.getparent(pytest.Module))
    Lane.in_process = module_lane and request.node.get_closest_marker("subprocess") is None
    yield
    Lane.in_process = module_lane


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, _server_lane: None) -> Iterator[RunningServer]:
    """One server (with a key) shared by the tests of a module; use unique ids per test."""
    home = tmp_path_factory.mktemp("home") / "hermes"
    srv = start_server(home)
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path: Path, _server_lane: None) -> Iterator[RunningServer]:
    """A server over an empty state.db, for tests that need a known database."""
    srv = start_server(tmp_path / "hermes")
    yield srv
    srv.stop()


@pytest.fixture
def client(server: RunningServer):
    return server.client


# Tiers of single tests in modules whose other tests are quick (a whole module says it with a
# `pytestmark` line at its top). `make test-fast` leaves out slow, interop and container.
TIERS: dict[str, tuple[str, ...]] = {
    "tests/api/test_openapi.py::test_schemathesis_finds_no_5xx_and_no_schema_violation": ("slow",),
    "tests/api/test_openapi.py::test_schemathesis_finds_no_5xx_and_no_schema_violation_on_a_newer_profile": ("slow",),
    "tests/hermrun/test_openapi.py::test_schemathesis_finds_no_5xx_and_no_schema_violation_on_the_dialect": ("slow",),
    "tests/reliability/test_heads.py::test_memory_does_not_grow_with_the_bytes_sent": ("slow",),
    "tests/reliability/test_heads.py::test_an_endless_head_is_cut": ("slow",),
    "tests/reliability/test_disconnects.py::test_hundred_clients_disconnecting_mid_stream": ("slow",),
    "tests/reliability/test_run_disconnects.py::test_dropped_run_streams_and_response_streams_lose_no_turn": ("slow",),
    "tests/api/test_checkpoint.py::test_the_wal_stays_bounded_and_reaches_the_main_file": ("slow",),
    "tests/api/test_stream.py::test_shutdown_waits_for_running_turns": ("slow",),
    "tests/unit/test_list_windows.py::test_growing_windows_give_the_reference_page": ("slow",),
    "tests/api/test_fixtures.py::test_seed_command_without_a_server_replace_and_yaml": ("slow",),
    "tests/api/test_discovery.py::test_open_server_with_cors_reports_it": ("slow",),
    # The image fixture replays the Dockerfile's install into a venv (no Docker needed, but seconds).
    "tests/test_container.py::test_replayed_install_is_exactly_the_lock": ("slow",),
    "tests/test_container.py::test_the_image_keeps_upstreams_home_and_user": ("slow",),
    "tests/test_container.py::test_started_image_passes_its_healthcheck_and_the_compose_client": ("slow",),
    "tests/test_container.py::test_the_upstream_style_home_serves_its_seeded_rows_with_the_key_of_its_env": ("slow",),
    # Seconds of their own (every operation against a second, keyless server; hadolint).
    "tests/api/test_route_contract.py::test_a_server_without_a_key_refuses_only_credentials_that_are_not_its_key":
        ("slow",),
    "tests/test_container.py::test_hadolint_finds_nothing": ("slow",),
    "tests/api/test_migration_advice.py::test_following_the_advice_migrates_and_then_the_server_serves_it":
        ("interop",),
    "tests/api/test_migration_advice.py::test_hermes_version_alone_does_not_migrate": ("interop",),
    "tests/api/test_storage.py::test_upstream_sessiondb_reads_and_writes_our_state_db": ("interop",),
    "tests/reliability/test_other_processes.py::test_upstream_sessiondb_opening_and_closing_the_file": ("interop",),
    "tests/api/test_head_limits.py::test_the_table_is_upstreams": ("interop",),
    # Tests of in_process modules that need their own server's process (exit status, start-up output).
    "tests/api/test_agent_delay.py::test_bad_values_are_refused": ("subprocess",),
    "tests/api/test_fixtures.py::test_serve_refuses_a_bad_fixture": ("subprocess", "slow"),
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in TIERS.get(item.nodeid.split("[", 1)[0], ()):
            item.add_marker(name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """With HERMES_UPSTREAM_VENV set (as `make test` does), an `interop` test that skips fails:
    the run was meant to compare with real hermes-agent, and a skip would hide that it did not."""
    outcome = yield
    report = outcome.get_result()
    if (report.skipped and os.environ.get("HERMES_UPSTREAM_VENV") and item.get_closest_marker("interop")
            and not hasattr(report, "wasxfail")):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"interop test skipped although HERMES_UPSTREAM_VENV="
                           f"{os.environ['HERMES_UPSTREAM_VENV']} is set: {reason}")
