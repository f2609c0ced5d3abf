"""hermes-control-mcp (PyPI), a structured-runs client, against hermes-server over real sockets.

Its durable tier (`HermesAPIClient`, `BridgeService`, `StateRegistry`) submits runs,
polls them, reads their events, stops them and reads the session history, as it does
against hermes-agent 0.19.0. It has no approval call; the approval is answered over
HTTP, as its users' own code would, while the client waits for the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.runs import RUN_SCRIPT, wait_status
from tests.support.server import KEY, RunningServer, start_with_script

hcm_api = pytest.importorskip("hermes_control_mcp.api")
from hermes_control_mcp.config import BridgeConfig  # noqa: E402
from hermes_control_mcp.registry import StateRegistry  # noqa: E402
from hermes_control_mcp.service import BridgeService  # noqa: E402

# A real third-party client (hermes-control-mcp) started as a service for the module: seconds.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("hcm") / "home", RUN_SCRIPT)
    yield srv
    srv.stop()


@pytest.fixture()
def bridge(server: RunningServer, tmp_path: Path) -> Iterator[BridgeService]:
    config = BridgeConfig(api_url=server.url, api_key=KEY, state_db=tmp_path / "bridge.db",
                          request_timeout=30, poll_interval=0.05)
    service = BridgeService(hcm_api.HermesAPIClient(config), StateRegistry(config.state_db))
    yield service
    service.close()


def test_health_start_wait_events_history(bridge: BridgeService) -> None:
    assert bridge.health()["status"] != "failed"
    started = bridge.start(lane="tests", prompt="hello from the client")
    assert started["run_id"].startswith("run_"), started
    done = bridge.wait(run_id=started["run_id"], timeout_seconds=15)
    assert done["status"] == "completed", done
    assert "plain answer" in str(done)
    events = bridge.events(run_id=started["run_id"])
    assert events["error_code"] is None, events
    assert [e["event"] for e in events["events"]] == ["message.delta", "message.delta", "reasoning.available",
                                                      "run.completed"]
    history = bridge.history(session_id=started["run_id"])
    assert "hello from the client" in str(history) and "plain answer" in str(history)


def test_same_lane_continues_the_session(bridge: BridgeService, server: RunningServer) -> None:
    first = bridge.start(lane="lane-2", prompt="first")
    bridge.wait(run_id=first["run_id"], timeout_seconds=15)
    second = bridge.start(lane="lane-2", prompt="second")
    assert bridge.wait(run_id=second["run_id"], timeout_seconds=15)["status"] == "completed"
    status = server.client.get(f"/v1/runs/{second['run_id']}").json()
    assert status["session_id"] == first["run_id"]


def test_stop(bridge: BridgeService) -> None:
    started = bridge.start(lane="stopper", prompt="slow one")
    time.sleep(0.3)
    stopped = bridge.stop(run_id=started["run_id"])
    assert stopped["status"] != "failed", stopped
    assert bridge.wait(run_id=started["run_id"], timeout_seconds=15)["status"] == "cancelled"


def test_approval_while_the_client_waits(bridge: BridgeService, server: RunningServer) -> None:
    started = bridge.start(lane="approver", prompt="approve this")
    run_id = started["run_id"]

    def approve() -> None:
        wait_status(server.client, run_id, ("waiting_for_approval",))
        server.client.post(f"/v1/runs/{run_id}/approval", json={"choice": "once"})

    helper = threading.Thread(target=approve)
    helper.start()
    done = bridge.wait(run_id=run_id, timeout_seconds=15)
    helper.join()
    assert done["status"] == "completed" and "tool done" in str(done)
    assert "approval.responded" in [e["event"] for e in bridge.events(run_id=run_id)["events"]]


# --- against `--hermes-version 0.21.2` (issue 20: "hermes-control-mcp ... drives runs, steer and
# messages against --hermes-version 0.21.2, as a test"). Sources: hermes-after-0.19.md §1.4
# "POST /v1/runs with durable Idempotency-Key" [R V4, V3], steer [M #85226], message paging [R V2 §B.7].


@pytest.fixture(scope="module")
def server_021(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_with_script(tmp_path_factory.mktemp("hcm021") / "home", RUN_SCRIPT, "--hermes-version", "0.21.2")
    yield srv
    srv.stop()


def _bridge(server: RunningServer, state_db: Path) -> BridgeService:
    config = BridgeConfig(api_url=server.url, api_key=KEY, state_db=state_db, request_timeout=30, poll_interval=0.05)
    return BridgeService(hcm_api.HermesAPIClient(config), StateRegistry(config.state_db))


def test_0_21_2_a_bridge_that_lost_its_state_gets_the_servers_replay(server_021: RunningServer,
                                                                      tmp_path: Path) -> None:
    """The client's Idempotency-Key reaches the server: a second bridge with no local record of the
    first submit sends the same key and body, and the server answers with the same run, replayed."""
    first, second = _bridge(server_021, tmp_path / "a.db"), _bridge(server_021, tmp_path / "b.db")
    try:
        started = first.start(lane="idem", prompt="hello once", idempotency_key="hcm-order-1")
        assert started["replayed"] is False and started["ok"], started
        assert first.wait(run_id=started["run_id"], timeout_seconds=15)["status"] == "completed"
        again = second.start(lane="idem", prompt="hello once", idempotency_key="hcm-order-1")
        assert again["run_id"] == started["run_id"] and again["replayed"] is True, again
        assert again["status"] == "completed"
        other = _bridge(server_021, tmp_path / "c.db")
        try:
            conflict = other.start(lane="idem", prompt="something else", idempotency_key="hcm-order-1")
            assert conflict["error_code"] == "idempotency_key_conflict" and not conflict["ok"], conflict
        finally:
            other.close()
    finally:
        first.close()
        second.close()


def test_0_21_2_steer_and_paged_history(server_021: RunningServer, tmp_path: Path) -> None:
    bridge = _bridge(server_021, tmp_path / "bridge.db")
    try:
        started = bridge.start(lane="steerer", prompt="slow one")
        run_id = started["run_id"]
        wait_status(server_021.client, run_id, ("running",))
        steered = bridge.steer(run_id=run_id, text="keep it short")
        # The client reads upstream's steer answer (no `status`) as status "running" and, by its own
        # rule, `ok: false`; an error would carry the server's code.
        assert steered["error_code"] is None and steered["status"] == "running", steered
        done = bridge.wait(run_id=run_id, timeout_seconds=15)
        assert done["status"] == "completed", done
        assert server_021.client.get(f"/v1/runs/{run_id}").json()["pending_steer"] == "keep it short"
        assert "run.steered" in [e["event"] for e in bridge.events(run_id=run_id)["events"]]
        page = bridge.history(session_id=run_id, limit=1)  # `order=oldest&limit=1`
        assert page["pagination"] == {"limit": 1, "offset": 0, "order": "oldest", "returned": 1}, page
        assert [m["role"] for m in page["messages"]] == ["user"] and page["messages"][0]["content"] == "slow one"
        whole = bridge.history(session_id=run_id, limit=500)
        assert [m["role"] for m in whole["messages"]] == ["user", "assistant"]
    finally:
        bridge.close()
