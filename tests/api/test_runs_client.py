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
