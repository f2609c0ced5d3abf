"""The `herm_run` fixture key: every problem at once by JSON path, and loading all or nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes_server.domain.errors import DocumentError
from hermes_server.hermrun.fixture import load, parse_herm_run, parse_state
from hermes_server.hermrun.store import FILE_NAME
from tests.hermrun.support import store_at

NOW = 1893456000.0
AGENT = {"id": "agent_123", "versions": [{"id": "v1", "roles": ["readonly"]}, {"id": "v2"}, {"id": "v3"}],
         "production": "v1", "tags": {"feature-x": "v2"}}


def problems(value: Any) -> list[str]:
    with pytest.raises(DocumentError) as caught:
        parse_herm_run(value, NOW)
    return [str(p) for p in caught.value.problems]


def load_into(home: Path, value: Any, replace: bool = False) -> Any:
    async def main() -> Any:
        store = store_at(home)
        try:
            return await load(store, parse_herm_run(value, NOW), replace=replace)
        finally:
            await store.close()
    return asyncio.run(main())


def test_the_issue_example() -> None:
    fixture = parse_herm_run({"agents": [AGENT], "sessions": [{
        "id": "session_1", "agentId": "agent_123", "subjectId": "user_1", "status": "running", "title": "T",
        "metadata": {"k": "v"}, "usage": {"input_tokens": 3, "context_max": 1000}}],
        "allowance": {"conversations": 5, "window_seconds": 60}}, NOW)
    agent = fixture.agents[0]
    assert [v.id for v in agent.versions] == ["v1", "v2", "v3"] and agent.versions[0].roles == ("readonly",)
    assert agent.production == "v1" and dict(agent.tags) == {"feature-x": "v2"}
    session = fixture.sessions[0]
    assert session.columns["status"] == "running" and session.columns["usage"]["total_tokens"] == 3
    assert session.columns["created_at"] == NOW == session.columns["updated_at"]


def test_agent_defaults() -> None:
    agent = parse_herm_run({"agents": [{"id": "a"}, {"id": "b", "versions": [{"id": "x"}, {"id": "y"}]}]},
                           NOW).agents
    assert [v.id for v in agent[0].versions] == ["v1"] and agent[0].production == "v1"
    assert agent[1].production == "x"


def test_every_problem_is_reported_by_path() -> None:
    assert problems({
        "agents": [
            {"id": "", "versions": []},
            {"id": "a", "versions": [{"id": "v1"}, {"id": "v1", "roles": [5]}], "production": "v9",
             "tags": {"t": "v9"}, "allowance": {"conversations": -1, "window_seconds": 0}},
            {"id": "a"},
        ],
        "sessions": [{"agentId": "a", "subjectId": 5, "status": "gone", "yoloMode": "x", "metadata": {"k": 1},
                      "usage": {"input_tokens": -1, "bogus": 1}, "preview": True, "tag": "t"}],
        "allowance": {"window_seconds": -5},
        "extra": 1,
    }) == [
        "$.herm_run.extra: unknown field",
        "$.herm_run.agents[0].id: must not be empty",
        "$.herm_run.agents[0].versions: must list at least one version",
        "$.herm_run.agents[1].versions[1].roles[0]: must be a non-empty string, got a number",
        "$.herm_run.agents[1].versions[1].id: duplicate version 'v1'",
        "$.herm_run.agents[1].production: 'v9' is not one of the agent's versions",
        "$.herm_run.agents[1].tags.t: must name one of the agent's versions, got 'v9'",
        "$.herm_run.agents[1].allowance.conversations: must be at least 0",
        "$.herm_run.agents[1].allowance.window_seconds: must be greater than 0",
        "$.herm_run.sessions[0].id: is required",
        "$.herm_run.sessions[0].subjectId: must be a string, got a number",
        "$.herm_run.sessions[0].status: must be one of idle, running, waiting_on_human, archived; got 'gone'",
        "$.herm_run.sessions[0].yoloMode: must be true or false, got a string",
        "$.herm_run.sessions[0].metadata.k: must be a string, got a number",
        "$.herm_run.sessions[0].usage.bogus: unknown field",
        "$.herm_run.sessions[0].usage.input_tokens: must be at least 0",
        "$.herm_run.sessions[0].tag: preview: true and tag are mutually exclusive",
        "$.herm_run.allowance.window_seconds: must be greater than 0",
        "$.herm_run.agents[2]: duplicate agent id 'a' (also at $.herm_run.agents[1])",
    ]


def test_not_an_object() -> None:
    assert problems([]) == ["$.herm_run: must be an object, got a list"]


def test_load_resolves_versions_and_checks_the_database(tmp_path: Path) -> None:
    result = load_into(tmp_path, {"agents": [AGENT], "sessions": [
        {"id": "s1", "agentId": "agent_123", "subjectId": "u"},
        {"id": "s2", "agentId": "agent_123", "subjectId": "u", "preview": True},
        {"id": "s3", "agentId": "agent_123", "subjectId": "u", "tag": "feature-x"},
        {"id": "s4", "agentId": "agent_123", "subjectId": "u", "agentVersion": "v1", "role": "readonly"},
    ]})
    assert result.as_json() == {"agents_written": 1, "sessions_written": 4, "sessions_total": 4}
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("SELECT id, agent_version FROM sessions ORDER BY id").fetchall() == [
            ("s1", "v1"), ("s2", "v3"), ("s3", "v2"), ("s4", "v1")]
    with pytest.raises(DocumentError) as caught:
        load_into(tmp_path, {"sessions": [
            {"id": "s1", "agentId": "agent_123", "subjectId": "u"},
            {"id": "s5", "agentId": "ghost", "subjectId": "u"},
            {"id": "s6", "agentId": "agent_123", "subjectId": "u", "agentVersion": "v7"},
            {"id": "s7", "agentId": "agent_123", "subjectId": "u", "tag": "nope"},
            {"id": "s8", "agentId": "agent_123", "subjectId": "u", "role": "admin"},
            {"id": "s9", "agentId": "agent_123", "subjectId": "u"},
        ]})
    assert [str(p) for p in caught.value.problems] == [
        "$.herm_run.sessions[0].id: session 's1' already exists in herm-run.db",
        "$.herm_run.sessions[1].agentId: unknown agent 'ghost': not in the fixture or herm-run.db",
        "$.herm_run.sessions[2].agentVersion: agent 'agent_123' has no version 'v7'",
        "$.herm_run.sessions[3].tag: agent 'agent_123' has no development tag 'nope'",
        "$.herm_run.sessions[4].role: version 'v1' of agent 'agent_123' does not define it",
    ]
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:  # nothing of the rejected fixture was written
        assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 4


def test_a_merge_redefines_an_agent_and_replace_starts_afresh(tmp_path: Path) -> None:
    load_into(tmp_path, {"agents": [AGENT]})
    load_into(tmp_path, {"agents": [{**AGENT, "tags": {"feature-x": "v3"}}]})
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("SELECT name, version_id FROM agent_tags").fetchall() == [("feature-x", "v3")]
    load_into(tmp_path, {"sessions": [{"id": "s", "agentId": "anything", "subjectId": "u"}]}, replace=True)
    with sqlite3.connect(tmp_path / FILE_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM agents").fetchone()[0] == 0
        assert conn.execute("SELECT agent_id, agent_version FROM sessions").fetchall() == [("anything", "v1")]


def test_state_changes() -> None:
    assert parse_state({"status": "running"}) == ("running", None)
    assert parse_state({"usage": {"model_calls": 1}})[1]["model_calls"] == 1
    for document, message in (({}, "$: give status, usage or both"),
                              ({"status": "done"}, "$.status: must be one of idle, running, waiting_on_human, "
                                                   "archived; got 'done'")):
        with pytest.raises(DocumentError) as caught:
            parse_state(document)
        assert str(caught.value.problems[0]) == message
