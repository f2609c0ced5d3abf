"""What 0.19.0 stores where hermes-server once stored something else: a cron job's provider and
model snapshots (taken from the home's `config.yaml` at create time) and a run's user row when its
message is a list of parts (only what 0.19.0's agent keeps). The expected values are 0.19.0's for
the same `config.yaml` and the same request (its snapshot function and its server, asked), but
for the provider of a section naming none, which 0.19.0 guesses from credentials
(docs/differences.md, "Cron jobs")."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.db import sql
from tests.support.runs import submit, wait_status
from tests.support.server import RunningServer, start_server

IMAGE = "data:image/png;base64,iVBORw0KGgo="


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    srv = start_server(tmp_path_factory.mktemp("exact") / "hermes",
                       env={"EXACT_MODEL": "from-env", "EXACT_URL": "http://127.0.0.1:9/v1"})
    yield srv
    srv.stop()


def _snapshots(server: RunningServer, config: str | None) -> tuple[Any, Any]:
    path = server.home / "config.yaml"
    if config is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(config, encoding="utf-8")
    response = server.client.post("/api/jobs", content=json.dumps({"name": "x", "schedule": "every 1h"}))
    assert response.status_code == 200, response.text
    job = response.json()["job"]
    stored = json.loads((server.home / "cron" / "jobs.json").read_text())["jobs"][-1]
    assert (stored["provider_snapshot"], stored["model_snapshot"]) == (job["provider_snapshot"], job["model_snapshot"])
    return job["provider_snapshot"], job["model_snapshot"]


@pytest.mark.parametrize(("config", "expected"), [
    (None, (None, None)),  # no configuration: nothing to snapshot
    # the oracle's own home
    ("model:\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  default: mock-model\n", ("custom", "mock-model")),
    ("model:\n  provider: Custom\n  base_url: http://127.0.0.1:9/v1\n  default: \" m \"\n", ("custom", "m")),
    ("model:\n  provider: openrouter\n  default: x/y\n", ("openrouter", "x/y")),
    ("model: just-a-model\n", (None, "just-a-model")),
    ("model:\n  model: mm\n", (None, "mm")),
    ("model:\n  default: ''\n  model: second\n", (None, "second")),
    ("model:\n  provider: custom\n  base_url: ${EXACT_URL}\n  default: ${EXACT_MODEL}\n", ("custom", "from-env")),
    ("model:\n  default: ${EXACT_UNSET}\n", (None, "${EXACT_UNSET}")),  # an unknown reference stays verbatim
    ("model:\n  provider: auto\n  default: 5\n", (None, None)),
    ("model: [\n", (None, None)),  # unreadable YAML: no snapshot, as 0.19.0 fails open
    ("- a list\n", (None, None)),
])
def test_a_new_job_snapshots_the_home_configuration(server: RunningServer, config: str | None,
                                                    expected: tuple[Any, Any]) -> None:
    assert _snapshots(server, config) == expected


def test_the_configuration_is_read_again_for_every_job(server: RunningServer) -> None:
    assert _snapshots(server, "model:\n  provider: custom\n  default: first\n") == ("custom", "first")
    assert _snapshots(server, "model:\n  provider: custom\n  default: second\n") == ("custom", "second")


def _stored_user_row(server: RunningServer, content: Any) -> Any:
    run_id = submit(server.client, {"input": [{"role": "user", "content": content}]})
    assert wait_status(server.client, run_id)["status"] == "completed"
    rows = sql(server.home / "state.db", "SELECT content FROM messages WHERE session_id = ? AND role = 'user'", run_id)
    assert len(rows) == 1
    return rows[0][0]


@pytest.mark.parametrize(("content", "stored"), [
    ([{"type": "input_text", "text": "A1"}, {"type": "input_text", "text": "A2"}], None),
    ([{"type": "text", "text": "B1"}, {"type": "input_image", "image_url": IMAGE}, {"type": "text", "text": "B2"}],
     "B1\n[screenshot]\nB2"),
    ([{"type": "input_text", "text": "C1"}, {"type": "image_url", "image_url": {"url": IMAGE}}], "[screenshot]"),
    (["D1", "D2"], None),
    ([{"type": "input_text", "text": "E1"}, {"type": "text", "text": "E2"}], "E2"),
    ([{"type": "Text", "text": "G1"}, {"type": "text", "text": "G2"}], "G2"),
    ([{"type": "text", "text": ""}, {"type": "text", "text": "H2"}], "\nH2"),
    ([{"type": "text", "text": "t1"}, {"type": "text", "text": "t2"}], "t1\nt2"),
    ("plain text", "plain text"),
])
def test_a_run_stores_what_the_agent_of_0190_keeps_of_a_list_of_parts(server: RunningServer, content: Any,
                                                                       stored: Any) -> None:
    assert _stored_user_row(server, content) == stored


def test_the_model_of_such_a_run_still_sees_every_text_part(server: RunningServer) -> None:
    run_id = submit(server.client, {"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "first"}, {"type": "text", "text": "second"}]}]})
    status = wait_status(server.client, run_id)
    assert status["status"] == "completed" and "first second" in status["output"]


def test_a_response_stores_the_parts_joined_as_before(server: RunningServer) -> None:
    """The Responses API normalises the parts before its agent sees them, so every text part is kept."""
    response = server.client.post("/v1/responses", json={"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "Q1"}, {"type": "text", "text": "Q2"}]}]})
    assert response.status_code == 200
    rows = sql(server.home / "state.db",
               "SELECT content FROM messages WHERE role = 'user' ORDER BY id DESC LIMIT 1")
    assert rows == [("Q1\nQ2",)]
