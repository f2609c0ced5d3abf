"""The stored herm.run session as its JSON object."""

from __future__ import annotations

import json

from hermes_server.hermrun.envelope import dumps
from hermes_server.hermrun.projection import iso_time, session_object, usage_snapshot

ROW = {
    "id": "session_1", "agent_id": "agent_123", "agent_version": "v2", "subject_id": "user_1", "status": "idle",
    "role": None, "title": "T", "yolo_mode": 1, "preview": 0, "tag": "feature-x", "metadata": '{"k": "v"}',
    "usage": None, "created_at": 1893456000.0, "updated_at": 1893456000.5,
}


def test_session_object() -> None:
    assert session_object(ROW) == {
        "object": "agent.session", "id": "session_1", "agentId": "agent_123", "agentVersion": "v2",
        "subjectId": "user_1", "status": "idle", "role": None, "title": "T", "yoloMode": True, "preview": False,
        "tag": "feature-x", "metadata": {"k": "v"}, "usage": None,
        "createdAt": "2030-01-01T00:00:00.000Z", "updatedAt": "2030-01-01T00:00:00.500Z",
    }


def test_times_out_of_range_are_clamped() -> None:
    assert iso_time(-5) == "1970-01-01T00:00:00.000Z"
    assert iso_time(1e300) == "9999-12-31T23:59:59.000Z"
    assert iso_time(float("nan")) == "1970-01-01T00:00:00.000Z"


def test_usage_defaults() -> None:
    assert usage_snapshot({"input_tokens": 10, "output_tokens": 5, "model_calls": 2, "context_max": 200000}) == {
        "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0, "cache_write_tokens": 0,
        "reasoning_tokens": 0, "total_tokens": 15, "model_calls": 2, "estimated_cost_usd": 0.0,
        "context_max": 200000,
    }
    assert usage_snapshot({"total_tokens": 99})["total_tokens"] == 99


def test_dumps_is_compact_utf8_and_survives_a_lone_surrogate() -> None:
    assert dumps({"t": "é"}) == '{"t":"é"}'.encode()
    assert json.loads(dumps({"id": "a\udc80"})) == {"id": "a\udc80"}
