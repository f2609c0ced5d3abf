"""The per-agent, per-subject conversation allowance: 5 per fixed 60 s window by default.

The clock is the server's manual test clock (`POST /_fixture/clock`), so windows are
crossed without waiting and Retry-After is checked as it counts down.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.hermrun.support import HermRunServer, error, start_herm_run

pytestmark = pytest.mark.in_process

T0 = 1893456000.0
BASE = {"agentId": "agent_123", "subjectId": "user_1"}


def post(hr: HermRunServer, **body: object) -> httpx.Response:
    return hr.client.post("/v1/sessions", json={**BASE, **body})


def spend(hr: HermRunServer, count: int = 5, **body: object) -> None:
    for _ in range(count):
        assert post(hr, **body).status_code == 201


def assert_limited(r: httpx.Response, retry_after: int) -> None:
    assert r.status_code == 429
    assert r.headers["retry-after"] == str(retry_after)
    assert r.json()["error"]["type"] == "rate_limited"


def test_the_sixth_create_in_a_window_is_refused_and_retry_after_counts_down(hr: HermRunServer) -> None:
    hr.clock(now=T0, step=0)
    spend(hr)
    r = post(hr)
    assert_limited(r, 60)
    assert r.json() == error("rate_limited", "the conversation allowance of this agent for this subject is spent "
                                             "(5 per 60 s); retry after the Retry-After delay")
    hr.clock(advance=10)
    assert_limited(post(hr), 50)
    hr.clock(advance=45.5)
    assert_limited(post(hr), 5)
    hr.clock(advance=4)
    assert_limited(post(hr), 1)
    hr.clock(advance=0.5)  # exactly 60 s after the window began: a new window
    spend(hr)
    assert_limited(post(hr), 60)


def test_the_window_is_fixed_not_sliding(hr: HermRunServer) -> None:
    hr.clock(now=T0, step=0)
    spend(hr, 1)
    hr.clock(advance=50)
    spend(hr, 4)  # late creates do not move the window's end
    assert_limited(post(hr), 10)


def test_counted_per_agent_and_subject(hr: HermRunServer) -> None:
    hr.clock(now=T0, step=0)
    spend(hr)
    assert_limited(post(hr), 60)
    spend(hr, 5, subjectId="user_2")
    spend(hr, 5, agentId="agent_other")
    assert_limited(post(hr, subjectId="user_2"), 60)


def test_refused_creates_consume_nothing(hr: HermRunServer) -> None:
    hr.clock(now=T0, step=0)
    for body in ({"role": "admin"}, {"tag": "nope"}, {"yoloMode": 1}, {"preview": True, "tag": "feature-x"}):
        assert post(hr, **body).status_code == 400
    assert post(hr, agentId="agent_ghost").status_code == 404
    spend(hr)  # all five are still there
    for _ in range(3):
        assert_limited(post(hr), 60)
    hr.clock(advance=59)
    assert_limited(post(hr), 1)
    hr.clock(advance=1)
    spend(hr, 5)  # the 429s took nothing from the next window either


def test_warm_consumes_nothing(hr: HermRunServer) -> None:
    hr.clock(now=T0, step=0)
    for _ in range(10):
        assert hr.client.post("/v1/sandboxes/warm", json=BASE).status_code == 202
    spend(hr)


def test_reset_restores_the_allowance(hr: HermRunServer) -> None:
    hr.clock(now=T0, step=0)
    spend(hr)
    assert_limited(post(hr), 60)
    hr.reset()
    hr.clock(now=T0, step=0)
    spend(hr)


def test_the_allowance_is_configurable_by_the_server(tmp_path: Path) -> None:
    srv = start_herm_run(tmp_path / "home", "--deterministic", "--herm-run-allowance", "2", "--herm-run-window", "10")
    try:
        srv.clock(now=T0, step=0)
        for _ in range(2):
            assert srv.client.post("/v1/sessions", json=BASE).status_code == 201
        assert_limited(srv.client.post("/v1/sessions", json=BASE), 10)
    finally:
        srv.stop()


def test_the_allowance_is_configurable_by_fixture(hr: HermRunServer) -> None:
    assert hr.seed({"allowance": {"conversations": 1, "window_seconds": 30},
                    "agents": [{"id": "agent_own", "allowance": {"conversations": 3, "window_seconds": 5}}]}
                   ).status_code == 200
    hr.clock(now=T0, step=0)
    spend(hr, 1)
    assert_limited(post(hr), 30)
    spend(hr, 3, agentId="agent_own")
    assert_limited(post(hr, agentId="agent_own"), 5)
