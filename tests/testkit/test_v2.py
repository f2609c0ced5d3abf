"""testkit v2: options, typed launcher keywords, fault builders, the async client, dialect control."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from hermes_server.testkit import (
    AsyncControlClient,
    Fault,
    FixtureDocumentError,
    FixtureError,
    HermesOptions,
    HermesServer,
    free_port,
)
from hermes_server.testkit.client import read_document

KIT = Path(__file__).resolve().parents[2] / "hermes_server" / "testkit"


def test_fault_builders_are_the_fault_objects_written_by_hand() -> None:
    assert Fault.status("session_get", 503, times=1) == {"kind": "status", "route": "session_get", "status": 503,
                                                         "times": 1}
    assert dict(Fault.latency(None, 250, times="always", probability=0.2, seed=7)) == {
        "kind": "latency", "latency_ms": 250, "times": "always", "probability": 0.2, "seed": 7}
    assert Fault.connection_reset("session_fork", when="after") == {"kind": "connection_reset",
                                                                     "route": "session_fork", "when": "after"}
    assert Fault.storage_unavailable(300) == {"kind": "storage_unavailable", "duration_ms": 300}
    for build in (Fault.disk_full, Fault.read_only, Fault.io_error):
        assert build("session_create") == {"kind": build.__name__, "route": "session_create"}
    assert Fault.fork_interrupted(3, status=500) == {"kind": "fork_interrupted", "after_step": 3, "status": 500}
    assert Fault.fork_paused(2, 400) == {"kind": "fork_paused", "after_step": 2, "latency_ms": 400}
    assert Fault.history_load_failure("session_chat") == {"kind": "history_load_failure", "route": "session_chat"}
    assert Fault.persistence_failure() == {"kind": "persistence_failure"}
    assert Fault.stream_cut("session_chat_stream", after_events=2, session_id="s") == {
        "kind": "stream_cut", "route": "session_chat_stream", "after_events": 2, "session_id": "s"}
    with pytest.raises(TypeError):
        Fault.status("session_get", tims=1)  # a misspelt field fails here, not as a 400 later


@pytest.mark.parametrize(("build", "own"), [(lambda: Fault.latency(None, 250, tims=2), "latency_ms"),
                                            (lambda: Fault.stream_cut("session_chat_stream", after_event=2),
                                             "after_events")], ids=["latency", "stream_cut"])
def test_a_misspelt_fault_field_names_itself_and_the_valid_ones(build: object, own: str) -> None:
    """Once `TypeError: _common() got an unexpected keyword argument 'tims'`: an internal name, no way out."""
    with pytest.raises(TypeError) as refused:
        build()  # type: ignore[operator]
    message = str(refused.value)
    assert "_common" not in message and message.startswith("Fault.")
    assert "'tims'" in message or "'after_event'" in message
    assert "did you mean" in message and own in message and "times" in message and "probability" in message


def test_options_are_flags_and_a_cache_key() -> None:
    options = HermesOptions(deterministic=True, agent_script="s.json", agent_delay=0.5, compress_after_messages=6,
                            upstream_quirks=True, fixture="f.json", flags=["--max-concurrent-runs", "1"])
    assert options.serve_args() == ["--agent", "script", "--agent-script", "s.json", "--deterministic",
                                    "--fixture", "f.json", "--upstream-quirks", "--agent-delay", "0.5",
                                    "--compress-after-messages", "6", "--max-concurrent-runs", "1"]
    assert hash(options) == hash(options.replace()) and options.replace(deterministic=False) != options
    with pytest.raises(TypeError, match="no field"):
        options.replace(colour="blue")
    server = HermesServer(options, agent_delay=1.0, extra_args=["--log-level", "debug"])
    assert server.options.agent_delay == 1.0 and server.extra_args[-2:] == ["--log-level", "debug"]


def test_a_fixture_file_error_has_no_status(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text("[]")
    with pytest.raises(FixtureDocumentError) as refused:
        read_document(path)
    assert refused.value.status is None and isinstance(refused.value, FixtureError)
    assert str(refused.value).startswith(f"{path}: a fixture is an object")


def test_the_kit_ships_its_type_marker() -> None:
    """PEP 561: without py.typed, mypy and pyright treat the typed client as untyped (`make lint` checks it)."""
    assert (KIT / "py.typed").is_file()


@pytest.fixture(scope="module")
def dialect_server() -> Iterator[HermesServer]:
    """A server with a dialect switched on through the generic `flags` (the kit names no dialect)."""
    with HermesServer(deterministic=True, flags=("--herm-run",)) as srv:
        yield srv


def test_seed_returns_every_parts_counts_and_the_dialect_route(dialect_server: HermesServer) -> None:
    control = dialect_server.control
    result = control.seed({"sessions": [{"id": "s1"}],
                           "herm_run": {"agents": [{"id": "a"}], "sessions": [{"id": "hr-1", "agentId": "a",
                                                                               "subjectId": "u"}]}})
    assert (result.sessions_written, result.parts["herm_run"]["sessions_written"]) == (1, 1)
    session = control.dialect("herm-run").set_session("hr-1", status="waiting_on_human")
    assert session["status"] == "waiting_on_human"
    with pytest.raises(FixtureError) as refused:
        control.dialect("herm-run").set_session("missing", status="idle")
    assert refused.value.status == 404
    with pytest.raises(ValueError):
        control.dialect("a/b")


def test_the_async_client_makes_the_same_calls(dialect_server: HermesServer) -> None:
    async def drive() -> None:
        async with AsyncControlClient(dialect_server.base_url, dialect_server.api_key) as control:
            assert (await control.reset()).sessions_total == 0
            installed = await control.faults.set([Fault.status("session_get", 503, times=1)])
            assert [f.spec["route"] for f in installed] == ["session_get"]
            async with httpx.AsyncClient(base_url=dialect_server.base_url,
                                         headers=dialect_server.headers) as api:
                assert (await api.get("/api/sessions/x")).status_code == 503
            calls = await control.assert_called("session_get", 1, status=503)
            assert calls[0].outcome == "response"
            with pytest.raises(AssertionError, match="expected session_get to be called 2 times"):
                await control.assert_called("session_get", 2)
            await control.assert_no_key_in_bodies()
            assert (await control.clock.advance(5)).manual
            assert await control.faults.clear() == []

    asyncio.run(drive())


def test_a_given_home_and_port_are_kept(tmp_path: Path) -> None:
    port = free_port()
    home = tmp_path / "home"
    with HermesServer(home=home, port=port, fixture_api=False, auth=False, log_path=tmp_path / "s.log") as srv:
        assert (srv.port, srv.headers, srv.http.get("/health").status_code) == (port, {}, 200)
    assert home.is_dir() and "serving" in (tmp_path / "s.log").read_text()
