"""The kit's side of the audit over HTTP on a real server: `control.audit()` parses the server's
answer, `assert_clean()` passes a careful sequence and fails a wrong one naming the rule, and the
plugin's `hermes_audit` marker (and its ini switch and flag) fails a test whose traffic has errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_server.testkit import AsyncControlClient, Audit, Fault, FixtureClient, FixtureError, HermesServer
from hermes_server.testkit.audit import Finding
from tests.support.server import KEY, start_server
from tests.testkit.support import outcomes, run_pytest

# Generated suites run by pytest in a subprocess: left out of make test-fast.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def srv() -> Iterator[HermesServer]:
    with HermesServer(deterministic=True) as server:
        yield server


@pytest.fixture
def control(srv: HermesServer) -> FixtureClient:
    srv.control.reset(to="empty")
    return srv.control


def test_an_empty_journal_is_clean(control: FixtureClient) -> None:
    audit = control.assert_clean()
    assert audit == Audit(checked=0, findings=())
    assert audit.clean and list(audit) == [] and len(audit) == 0
    assert audit.describe() == "clean: no finding in 0 journal entries"


def test_a_control_character_id_is_a_typed_error_finding(srv: HermesServer, control: FixtureClient) -> None:
    assert srv.http.post("/api/sessions", json={"id": "a\nb"}).status_code == 400
    audit = control.audit()
    assert audit.checked == 1 and len(audit) == 1
    (finding,) = audit
    assert isinstance(finding, Finding) and finding.error
    assert (finding.rule, finding.severity, finding.requests, finding.session_id) == (
        "control-character-id", "error", (1,), None)  # the server does not echo such an id
    assert finding.message and audit.errors == (finding,) and audit.warnings == ()
    with pytest.raises(AssertionError) as failed:
        control.assert_clean()
    text = str(failed.value)
    assert "1 error(s), 0 warning(s) in 1 journal entries" in text
    assert f"control-character-id (error) at #1: {finding.message}" in text


def test_unsafe_replay_after_a_503_fails_and_reading_first_is_clean(srv: HermesServer,
                                                                     control: FixtureClient) -> None:
    control.seed({"sessions": [{"id": "case"}]})
    control.faults.set(Fault.status("session_chat", 503, times=2))
    chat = {"message": "Summarize"}
    assert srv.http.post("/api/sessions/case/chat", json=chat).status_code == 503
    assert srv.http.post("/api/sessions/case/chat", json=chat).status_code == 503
    with pytest.raises(AssertionError, match=r"unsafe-replay \(error\) at #1, #2 session 'case'"):
        control.assert_clean()

    control.reset(to="empty")  # the careful connector: the same work, the messages read in between
    control.seed({"sessions": [{"id": "case"}]})
    control.faults.set(Fault.status("session_chat", 503, times=1))
    assert srv.http.post("/api/sessions/case/chat", json=chat).status_code == 503
    assert srv.http.get("/api/sessions/case/messages").status_code == 200
    control.clock.advance(1)  # Retry-After: 1, on the deterministic server's manual clock
    assert srv.http.post("/api/sessions/case/chat", json=chat).status_code == 200
    assert control.assert_clean().checked == 3


def test_a_fault_builder_sets_retry_after(srv: HermesServer, control: FixtureClient) -> None:
    control.faults.set(Fault.status("sessions_list", 503, retry_after=0, times=1))
    assert srv.http.get("/api/sessions").headers["Retry-After"] == "0"
    assert srv.http.get("/api/sessions").status_code == 200
    assert control.assert_clean().checked == 2


def test_warnings_do_not_fail_but_are_listed(srv: HermesServer, control: FixtureClient) -> None:
    assert srv.http.get("/api/sessions", params={"limit": 0}).status_code == 200
    audit = control.assert_clean()
    assert [(f.rule, f.severity) for f in audit] == [("zero-limit-list", "warning")]
    assert audit.describe().startswith("0 error(s), 1 warning(s) in 1 journal entries\n  zero-limit-list (warning)")


def test_the_async_client_audits_the_same(srv: HermesServer, control: FixtureClient) -> None:
    assert srv.http.post("/api/sessions", json={"id": "x\ny"}).status_code == 400

    async def both() -> tuple[Audit, str]:
        async with AsyncControlClient(srv.base_url, srv.api_key) as aio:
            audit = await aio.audit()
            with pytest.raises(AssertionError) as failed:
                await aio.assert_clean()
            return audit, str(failed.value)

    audit, text = asyncio.run(both())
    assert audit == control.audit() and "control-character-id (error) at #1" in text


def test_a_server_without_the_fixture_api_says_so(tmp_path: Path) -> None:
    plain = start_server(tmp_path / "home", key=KEY)
    try:
        with FixtureClient(plain.url, KEY) as client, pytest.raises(FixtureError, match="--fixture-api"):
            client.audit()
    finally:
        plain.stop()


# -- the plugin: a connector's suite, run in a subprocess ----------------------------------------

AUDITED = '''
import pytest

SEED = {"sessions": [{"id": "case"}]}

@pytest.mark.hermes_audit
def test_careful(hermes):
    hermes.control.seed(SEED)
    hermes.control.faults.set({"route": "session_chat", "kind": "status", "status": 503, "times": 1,
                               "retry_after": 0})
    assert hermes.http.post("/api/sessions/case/chat", json={"message": "hi"}).status_code == 503
    assert hermes.http.get("/api/sessions/case/messages").status_code == 200
    assert hermes.http.post("/api/sessions/case/chat", json={"message": "hi"}).status_code == 200

@pytest.mark.hermes_audit
def test_replays_blindly(hermes):
    hermes.control.seed(SEED)
    hermes.control.faults.set({"route": "session_chat", "kind": "status", "status": 503, "times": 2})
    for _ in range(2):
        assert hermes.http.post("/api/sessions/case/chat", json={"message": "hi"}).status_code == 503

@pytest.mark.hermes_audit
def test_warning_only(hermes):
    assert hermes.http.get("/api/sessions?limit=0").status_code == 200

@pytest.mark.hermes_audit
def test_scoped_to_this_test(hermes_server):
    # the marker brings the reset `hermes`: the blind replay of the test before is not this one's
    assert hermes_server.http.get("/api/sessions").status_code == 200

def test_not_audited(hermes):
    assert hermes.http.post("/api/sessions", json={"id": "a\\nb"}).status_code == 400

@pytest.mark.hermes_audit
def test_fails_of_its_own(hermes):
    assert hermes.http.post("/api/sessions", json={"id": "a\\nb"}).status_code == 201
'''


@pytest.mark.slow
def test_the_marker_fails_a_test_whose_traffic_has_errors(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"test_audited.py": AUDITED}, "-q")
    assert outcomes(run.output) == {
        "test_careful": "PASSED", "test_replays_blindly": "FAILED", "test_warning_only": "PASSED",
        "test_scoped_to_this_test": "PASSED", "test_not_audited": "PASSED", "test_fails_of_its_own": "FAILED",
    }, run.output
    blind = run.output[run.output.index("_ test_replays_blindly _"):run.output.index("_ test_fails_of_its_own _")]
    assert "hermes_audit: http://127.0.0.1:" in blind and "the audit of the connector's traffic has error findings" in blind
    assert "unsafe-replay (error) at #1, #2 session 'case'" in blind
    assert "hermes-server audit" in blind and "hermes-server requests" in blind  # report sections
    assert "Traceback" not in blind
    own = run.output[run.output.index("_ test_fails_of_its_own _"):]
    assert "assert 400 == 201" in own  # its own failure stays the reason...
    assert "control-character-id (error) at #1" in own  # ...and its audit is shown beside it
    assert "1 failed" not in run.output and "2 failed, 4 passed" in run.output


SWITCHED = '''
def test_replays(hermes):
    hermes.control.seed({"sessions": [{"id": "case"}]})
    hermes.control.faults.set({"route": "session_chat", "kind": "connection_reset", "when": "after", "times": 2})
    for _ in range(2):
        try:
            hermes.http.post("/api/sessions/case/chat", json={"message": "hi"})
        except Exception:
            pass

def test_clean(hermes):
    assert hermes.http.get("/api/sessions").status_code == 200

def test_no_server():
    pass
'''


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ini", "flag"])
def test_the_ini_switch_and_the_flag_audit_a_whole_suite(tmp_path: Path, how: str) -> None:
    files = {"test_switched.py": SWITCHED}
    if how == "ini":
        files["pytest.ini"] = "[pytest]\nhermes_audit = true\n"
    run = run_pytest(tmp_path / "on", files, "-q", *(["--hermes-audit"] if how == "flag" else []))
    assert outcomes(run.output) == {"test_replays": "FAILED", "test_clean": "PASSED", "test_no_server": "PASSED"}, \
        run.output
    assert "unsafe-replay (error) at #1, #2 session 'case'" in run.output
    assert "journal not readable" not in run.output and "#2 POST /api/sessions/case/chat -> connection_reset" in run.output
    off = run_pytest(tmp_path / "off", {"test_switched.py": SWITCHED}, "-q")
    assert "3 passed" in off.output, off.output
