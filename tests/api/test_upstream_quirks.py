"""`serve --upstream-quirks`: each deviation of docs/differences.md switched off answers as 0.19.0.

Each switch is a member of `Quirk`; the flag (or HERMES_SERVER_UPSTREAM_QUIRKS=1) turns all
of them on. The answers below are the ones the oracle gives (tools/oracle_*diff.py
`--upstream-quirks` compare all of them side by side).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_server.api.deviations import SWAPS, CrashingInput, LongCreateTitle
from hermes_server.api.errors import invalid_field
from hermes_server.app import build_errors
from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain.errors import AgentFailed, StorageFault
from hermes_server.domain.jobs import JobInputError
from hermes_server.domain.openai_messages import MessagesError
from hermes_server.domain.quirks import Quirk, Quirks
from hermes_server.domain.titles import TitleTooLong
from hermes_server.http.errors import ChunkedBodyTooLarge, UndecodableBearer
from hermes_server.units import QUIRK_UNITS
from tests.support.http import create_session, raw_request
from tests.support.server import RunningServer, start_server, start_with_script

pytestmark = pytest.mark.in_process

CRASH = (500, "text/plain; charset=utf-8", b"500 Internal Server Error\n\nServer got itself in trouble")
SOURCE = Path(__file__).resolve().parents[2] / "hermes_server"


@pytest.fixture(scope="module")
def quirky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("quirky") / "hermes", {"turns": [
        {"match": "boom", "steps": [{"fail": "kaboom"}]}, {"reply": "ok"}]}, "--upstream-quirks", "--fixture-api")
    yield srv
    srv.stop()


def crash(response) -> tuple[int, str, bytes]:
    return response.status_code, response.headers["content-type"], response.content


def test_d1_long_create_title_crashes_and_stores_nothing(quirky: RunningServer) -> None:
    assert crash(quirky.client.post("/api/sessions", json={"id": "T", "title": "t" * 101})) == CRASH
    assert quirky.client.get("/api/sessions/T").status_code == 404


def test_d2_a_fork_takes_over_its_source_messages(quirky: RunningServer) -> None:
    create_session(quirky, "SRC")
    assert quirky.client.post("/api/sessions/SRC/chat", json={"message": "hi"}).status_code == 200
    assert quirky.client.post("/api/sessions/SRC/fork", json={"id": "KID"}).status_code == 201
    assert quirky.client.post("/api/sessions/KID/chat", json={"message": "in the fork"}).status_code == 200
    assert quirky.client.get("/api/sessions/SRC/messages").json()["session_id"] == "KID"


def test_d3_create_accepts_control_characters(quirky: RunningServer) -> None:
    assert quirky.client.post("/api/sessions", json={"id": "t\tb"}).status_code == 201
    assert quirky.client.post("/api/sessions", json={"id": "t\nb"}).status_code == 400  # CR/LF/NUL stay refused


def test_d4_chunked_body_over_the_limit_is_invalid_json(quirky: RunningServer) -> None:
    answer = raw_request(quirky, "POST", "/api/sessions", (b" " * 1_000_000 for _ in range(11)))
    assert answer.status == 400
    assert json.loads(answer.body) == {"error": {"message": "Invalid JSON in request body",
                                                 "type": "invalid_request_error", "param": None, "code": None}}


def test_d5_undecodable_bearer_and_agent_failure_crash(quirky: RunningServer) -> None:
    answer = raw_request(quirky, "GET", "/api/sessions", headers={"Authorization": b"Bearer \xff\xfe"}, auth=False)
    assert (answer.status, answer.body) == (500, CRASH[2])
    create_session(quirky, "B")
    assert crash(quirky.client.post("/api/sessions/B/chat", json={"message": "boom"})) == CRASH


def test_d6_input_upstream_crashes_on(quirky: RunningServer) -> None:
    for body in (b'{"id": "x\\ud800y"}', b'{"id": "SP", "system_prompt": "\\udc00"}'):
        assert crash(quirky.client.post("/api/sessions", content=body)) == CRASH
    for body in (b"[1]", b'{"messages": ["hi"]}', b'{"messages": [{"role": ["user"], "content": "x"}]}'):
        assert crash(quirky.client.post("/v1/chat/completions", content=body)) == CRASH
    # What 0.19.0 refuses itself stays a 400.
    assert quirky.client.post("/api/sessions", content=b"[1]").status_code == 400


def test_d7_storage_failure_crashes(quirky: RunningServer) -> None:
    assert quirky.client.put("/_fixture/faults", json={"route": "session_create", "kind": "disk_full",
                                                        "times": 1}).status_code == 200
    assert crash(quirky.client.post("/api/sessions", json={"id": "full"})) == CRASH


def test_d8_jobs_bad_input_is_500(quirky: RunningServer) -> None:
    response = quirky.client.post("/api/jobs", json={"name": 5, "schedule": "every 1h"})
    assert (response.status_code, response.json()) == (500, {"error": "'int' object has no attribute 'strip'"})


def test_the_environment_variable_turns_them_on(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "hermes", env={"HERMES_SERVER_UPSTREAM_QUIRKS": "1"})
    try:
        assert crash(srv.client.post("/api/sessions", json={"title": "t" * 101})) == CRASH
    finally:
        srv.stop()


# Each switch alone: the error it governs, answered by the error table composed with only it on.
SWITCHED_ERRORS = {
    Quirk.TITLE_TOO_LONG_500: (LongCreateTitle(TitleTooLong("Title too long (101 chars, max 100)")), 400, 500),
    Quirk.CHUNKED_OVER_LIMIT_400: (ChunkedBodyTooLarge(), 413, 400),
    Quirk.UNDECODABLE_BEARER_500: (UndecodableBearer(), 401, 500),
    Quirk.AGENT_FAILURE_500: (AgentFailed(RuntimeError("x")), 500, 500),
    Quirk.BAD_INPUT_500: (invalid_field("model", "Invalid value for 'model': text must be valid Unicode"), 400, 500),
    Quirk.STORAGE_FAILURE_500: (StorageFault("database or disk is full", write=True), 503, 500),
    Quirk.JOBS_BAD_INPUT_500: (JobInputError("'int' object has no attribute 'strip'"), 400, 500),
}


@pytest.mark.parametrize("switch", sorted(SWITCHED_ERRORS, key=lambda quirk: quirk.value))
def test_each_switch_alone(switch: Quirk) -> None:
    error, default_status, upstream_status = SWITCHED_ERRORS[switch]
    assert build_errors(Quirks()).render(error).status_code == default_status
    alone = build_errors(Quirks.of(switch)).render(error)
    assert alone.status_code == upstream_status
    others = Quirks(frozenset(Quirk) - {switch})
    assert build_errors(others).render(error).status_code == default_status


def test_agent_failure_switch_crashes_as_text() -> None:
    answer = build_errors(Quirks.of(Quirk.AGENT_FAILURE_500)).render(AgentFailed(RuntimeError("x")))
    assert answer.body == CRASH[2] and answer.media_type.startswith("text/plain")


def test_messages_errors_crash_only_where_upstream_does() -> None:
    errors = build_errors(Quirks.of(Quirk.BAD_INPUT_500))
    assert errors.render(MessagesError("Each message must be an object", upstream_crashes=True)).status_code == 500
    assert errors.render(MessagesError("Missing or invalid 'messages' field", bare=True)).status_code == 400
    assert errors.render(CrashingInput(TitleTooLong("x"))).status_code == 500


def test_every_switch_is_one_unit_and_nothing_else_asks() -> None:
    """Each quirk is one unit (hermes_server/units/): an answer (the rows of api/deviations.py's SWAPS
    it swaps in), a behaviour (the strategy it sets), or both (D6). No other code names a quirk, so
    none asks whether one is on."""
    assert set(QUIRK_UNITS) == set(Quirk)
    swapped = {swap.quirk for swap in SWAPS}
    for quirk, unit in QUIRK_UNITS.items():
        rows = unit.errors(build_errors(Quirks()))
        changes = unit.behaviour(Behaviour(), Settings(home=Path("unused"))) != Behaviour()
        assert (quirk in swapped) == bool(rows) and (rows or changes), quirk
    outside = [path.relative_to(SOURCE).as_posix() for path in SOURCE.rglob("*.py")
               if "Quirk." in path.read_text() and path.parent.name != "units"
               and path.name not in ("quirks.py", "deviations.py")]
    assert outside == []
    assert Quirks.upstream(True) == Quirks(frozenset(Quirk))
    assert Quirks.upstream(False) == Quirks()
