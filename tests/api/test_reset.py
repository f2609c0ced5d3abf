"""`POST /_fixture/reset` over HTTP: afterwards a server answers every read as a fresh one does.

One server per mode. Its very first answers are the fresh server's; then one of each
kind of state is made (a session, a cron job, a stored response, a run, an
Idempotency-Key replay, a chat turn that changes /v1/toolsets, a herm.run session),
the server is reset, and the same requests must get the same answers again. With
`--deterministic` that is byte for byte (ids and timestamps included, so the next
cron job id cannot collide with a leftover one); without it, ids and times are
random, and the shape of each answer is compared instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.hermrun.support import start_herm_run
from tests.support.server import RunningServer, start_server

IDEMPOTENT = {"Idempotency-Key": "reset-idem"}
COMPLETION = {"model": "hermes-agent", "messages": [{"role": "user", "content": "remember me"}]}
JOB = {"name": "hourly", "schedule": "every 1h", "prompt": "say hi"}
MODES = ("deterministic", "random", "herm-run")


@dataclass
class Served:
    """A `--fixture-api` server: its Bearer client, and its herm.run client with `--herm-run`."""

    server: RunningServer
    herm: httpx.Client | None
    deterministic: bool

    @property
    def control(self) -> httpx.Client:
        return self.server.client


@pytest.fixture(scope="module", params=MODES)
def srv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp(f"reset-{request.param}") / "home"
    deterministic = request.param != "random"
    flags = ("--deterministic",) if deterministic else ()
    if request.param == "herm-run":
        herm_run = start_herm_run(home, *flags)
        served = Served(herm_run.server, herm_run.client, deterministic)
    else:
        home.mkdir(parents=True)
        served = Served(start_server(home, "--fixture-api", *flags), None, deterministic)
    yield served
    if served.herm is not None:
        served.herm.close()
    served.server.stop()


def _answer(response: httpx.Response) -> tuple[int, Any]:
    return response.status_code, response.json()


def observe(srv: Served) -> dict[str, Any]:
    """What a client sees: every read first, then the writes whose answers depend on leftover state."""
    c = srv.control
    seen: dict[str, Any] = {
        "faults": _answer(c.get("/_fixture/faults")),
        "clock": _answer(c.get("/_fixture/clock")),
        "sessions": _answer(c.get("/api/sessions")),
        "jobs": _answer(c.get("/api/jobs")),
        "toolsets": _answer(c.get("/v1/toolsets")),
    }
    if srv.herm is not None:
        seen["herm_sessions"] = _answer(srv.herm.get("/v1/sessions"))
        seen["herm_create"] = _answer(srv.herm.post("/v1/sessions", json={"agentId": "a", "subjectId": "u"}))
    made = c.post("/api/sessions", json={})
    seen["session_create"] = _answer(made)
    seen["job_create"] = _answer(c.post("/api/jobs", json=JOB))
    seen["jobs_after"] = _answer(c.get("/api/jobs"))
    completion = c.post("/v1/chat/completions", json=COMPLETION, headers=IDEMPOTENT)
    sid = completion.headers["x-hermes-session-id"]
    seen["completion"] = _answer(completion)
    # A replay of a turn from before the reset would name a session the reset deleted.
    seen["completion_session"] = _answer(c.get(f"/api/sessions/{sid}/messages"))
    seen["toolsets_after"] = _answer(c.get("/v1/toolsets"))
    return seen


def make_state(srv: Served) -> dict[str, str]:
    """One of each kind of state; the ids of those only an id can read back."""
    c = srv.control
    c.post("/api/sessions", json={"id": "left-over"}).raise_for_status()
    c.post("/api/jobs", json={**JOB, "name": "left over"}).raise_for_status()
    response = c.post("/v1/responses", json={"input": "keep me"}).json()["id"]
    assert c.get(f"/v1/responses/{response}").status_code == 200
    run = c.post("/v1/runs", json={"input": "run me"}).json()["run_id"]
    deadline = time.monotonic() + 10
    while c.get(f"/v1/runs/{run}").json()["status"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.02)
    first = c.post("/v1/chat/completions", json=COMPLETION, headers=IDEMPOTENT)
    again = c.post("/v1/chat/completions", json=COMPLETION, headers=IDEMPOTENT)
    assert again.headers["x-hermes-session-id"] == first.headers["x-hermes-session-id"]  # a replay
    c.put("/_fixture/faults", json={"kind": "latency", "latency_ms": 1, "times": "always"}).raise_for_status()
    c.post("/_fixture/clock", json={"advance": 3600})
    if srv.herm is not None:
        assert srv.herm.post("/v1/sessions", json={"agentId": "agent_x", "subjectId": "user_1"}).status_code == 201
    return {"response": response, "run": run}


def shape(value: Any) -> Any:
    """An answer with every scalar replaced by its type: what must match when ids and times are random."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def test_after_a_reset_every_answer_is_a_fresh_servers(srv: Served) -> None:
    fresh = observe(srv)
    assert fresh["completion_session"][0] == 200 and fresh["jobs_after"][1]["jobs"] != []
    srv.control.post("/_fixture/reset", json={}).raise_for_status()
    made = make_state(srv)
    reset = srv.control.post("/_fixture/reset", json={})
    assert reset.status_code == 200
    assert srv.control.get("/_fixture/requests").json()["data"] == []
    again = observe(srv)
    assert srv.control.get(f"/v1/responses/{made['response']}").status_code == 404
    assert srv.control.get(f"/v1/runs/{made['run']}").status_code == 404
    if srv.deterministic:
        assert again == fresh
    else:
        assert {key: (status, shape(body)) for key, (status, body) in again.items()} == \
               {key: (status, shape(body)) for key, (status, body) in fresh.items()}
        assert len(again["jobs_after"][1]["jobs"]) == 1 and again["sessions"] == fresh["sessions"]


def test_reset_answers_as_before(srv: Served) -> None:
    """The reset's own answer: what the databases hold afterwards (nothing), in today's words."""
    body = srv.control.post("/_fixture/reset", json={"to": "empty"}).json()
    expected: dict[str, Any] = {"object": "hermes.fixture.reset", "to": "empty", "sessions_written": 0,
                                "messages_written": 0, "sessions_total": 0, "messages_total": 0}
    if srv.herm is not None:
        expected["herm_run"] = {"agents_written": 0, "sessions_written": 0, "sessions_total": 0}
    assert body == expected
