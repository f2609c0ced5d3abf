"""The fixture format and the fault specs: what is accepted, what becomes of it, and where problems are reported."""

from __future__ import annotations

import json

import pytest

from hermes_server.app import build_routes
from hermes_server.domain.errors import DocumentError
from hermes_server.domain.projection import CONTENT_JSON_PREFIX
from hermes_server.testing.faults import FaultRegistry
from hermes_server.testing.model import parse_fixture

NOW = 1_900_000_000.0
# A served table of these routes (what a fault may name is read off the served routes).
ROUTES = [route for route in build_routes() if route.name in (
    "health", "sessions", "session", "session_messages", "session_fork", "session_chat", "session_chat_stream")]


def problems(document) -> list[tuple[str, str]]:
    with pytest.raises(DocumentError) as info:
        parse_fixture(document, NOW)
    return [(p.path, p.message) for p in info.value.problems]


def paths(document) -> list[str]:
    return [path for path, _ in problems(document)]


def test_minimal_session_gets_upstream_defaults() -> None:
    fixture = parse_fixture({"sessions": [{"id": "a"}]}, NOW)
    (row,) = fixture.sessions
    assert row.columns["source"] == "api_server"
    assert row.columns["started_at"] == NOW
    assert row.columns["message_count"] == 0 and row.columns["archived"] == 0
    assert row.columns["ended_at"] is None and row.columns["model_config"] is None


def test_every_session_column_is_expressible() -> None:
    session = {
        "id": "full", "source": "telegram", "user_id": "u-1", "session_key": "k", "chat_id": "c", "chat_type": "dm",
        "thread_id": "t", "display_name": "D", "origin_json": {"platform": "telegram"}, "expiry_finalized": 1,
        "model": "m", "model_config": {"max_iterations": 90}, "system_prompt": "sp", "started_at": 100,
        "ended_at": 200, "end_reason": "user_exit", "message_count": 7, "tool_call_count": 3, "input_tokens": 10,
        "output_tokens": 11, "cache_read_tokens": 12, "cache_write_tokens": 13, "reasoning_tokens": 14,
        "cwd": "/w", "git_branch": "main", "git_repo_root": "/w", "billing_provider": "p", "billing_base_url": "u",
        "billing_mode": "b", "estimated_cost_usd": 0.5, "actual_cost_usd": 0.25, "cost_status": "s",
        "cost_source": "c", "pricing_version": "v", "title": "T", "api_call_count": 2, "handoff_state": "h",
        "handoff_platform": "hp", "handoff_error": "he", "compression_failure_cooldown_until": 300,
        "compression_failure_error": "ce", "compression_fallback_streak": 1, "profile_name": "pn",
        "rewind_count": 4, "archived": True,
    }
    (row,) = parse_fixture({"sessions": [session]}, NOW).sessions
    expected = dict(session, archived=1, origin_json='{"platform": "telegram"}',
                    model_config='{"max_iterations": 90}', parent_session_id=None)
    for key, value in expected.items():
        assert row.columns[key] == value, key


def test_messages_shapes_counters_and_default_timestamps() -> None:
    doc = {"sessions": [{"id": "s", "started_at": 1000, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}, {"id": "c2"}], "reasoning": "r"},
        {"role": "tool", "content": [{"type": "text", "text": "out"}], "tool_call_id": "c1", "tool_name": "t",
         "timestamp": "1970-01-01T00:20:00Z"},
        {"role": "user", "content": "old", "active": False, "compacted": True},
        {"role": "assistant", "content": "done", "reasoning_details": [{"x": 1}], "finish_reason": "stop"},
    ]}]}
    (row,) = parse_fixture(doc, NOW).sessions
    msgs = [m.columns for m in row.messages]
    assert [m["timestamp"] for m in msgs] == [1001.0, 1002.0, 1200.0, 1201.0, 1202.0]
    assert msgs[1]["tool_calls"] == '[{"id": "c1"}, {"id": "c2"}]'
    assert msgs[2]["content"] == CONTENT_JSON_PREFIX + '[{"type": "text", "text": "out"}]'
    assert (msgs[3]["active"], msgs[3]["compacted"]) == (0, 1)
    assert json.loads(msgs[4]["reasoning_details"]) == [{"x": 1}]
    # Counters count active rows only, as after an in-place compaction; explicit values win.
    assert (row.columns["message_count"], row.columns["tool_call_count"]) == (4, 2)
    (row,) = parse_fixture({"sessions": [{"id": "s", "message_count": 9, "messages": [{"role": "user"}]}]}, NOW).sessions
    assert row.columns["message_count"] == 9


def test_end_reason_without_ended_at_ends_at_the_last_activity() -> None:
    doc = {"sessions": [{"id": "s", "started_at": 10, "end_reason": "compression",
                         "messages": [{"role": "user", "timestamp": 50}]}]}
    assert parse_fixture(doc, NOW).sessions[0].columns["ended_at"] == 50


def test_relations_set_markers_and_parents_come_first() -> None:
    doc = {"sessions": [
        {"id": "deleg", "parent": "root", "relation": "delegate"},
        {"id": "tip", "parent": "root", "relation": "compression"},
        {"id": "br", "parent": "root", "relation": "branch", "model_config": {"k": 1}},
        {"id": "root", "end_reason": "compression"},
    ]}
    rows = parse_fixture(doc, NOW).sessions
    assert [r.id for r in rows] == ["root", "deleg", "tip", "br"]
    by_id = {r.id: r.columns for r in rows}
    assert json.loads(by_id["deleg"]["model_config"]) == {"_delegate_from": "root"}
    assert json.loads(by_id["br"]["model_config"]) == {"k": 1, "_branched_from": "root"}
    assert by_id["tip"]["model_config"] is None and by_id["tip"]["parent_session_id"] == "root"


@pytest.mark.parametrize("document, expected", [
    ([], [("$", "must be an object, got a list")]),
    ({"sessions": {}}, [("$.sessions", "must be a list, got an object")]),
    ({"sesions": []}, [("$.sesions", "unknown field")]),
    ({"hermes_fixture": 2}, [("$.hermes_fixture", "unsupported fixture format 2 (this server reads 1)")]),
    ({"sessions": [{}]}, [("$.sessions[0].id", "is required")]),
    ({"sessions": [{"id": "  "}]}, [("$.sessions[0].id", "must not be empty")]),
    ({"sessions": [{"id": 5}]}, [("$.sessions[0].id", "must be a string, got a number")]),
    ({"sessions": [{"id": "a", "source": None}]}, [("$.sessions[0].source", "must be a string, got null")]),
    ({"sessions": [{"id": "a", "input_tokens": -1}]}, [("$.sessions[0].input_tokens", "must be at least 0")]),
    ({"sessions": [{"id": "a", "input_tokens": 1.5}]}, [("$.sessions[0].input_tokens", "must be an integer, got a number")]),
    ({"sessions": [{"id": "a", "archived": 1}]}, [("$.sessions[0].archived", "must be true or false, got a number")]),
    ({"sessions": [{"id": "a", "started_at": "yesterday"}]},
     [("$.sessions[0].started_at", "must be Unix seconds or an ISO-8601 date-time, got 'yesterday'")]),
    ({"sessions": [{"id": "a", "model_config": "x"}]},
     [("$.sessions[0].model_config", "must be an object or null, got a string")]),
    ({"sessions": [{"id": "a", "title": "\ud800"}]},
     [("$.sessions[0].title", "contains a lone UTF-16 surrogate, which state.db cannot store")]),
    ({"sessions": [{"id": "a", "relation": "fork"}]}, [("$.sessions[0].relation", "needs a parent")]),
    ({"sessions": [{"id": "a", "parent": "b", "relation": "cousin"}, {"id": "b"}]},
     [("$.sessions[0].relation", "must be one of delegate, branch, compression, fork; got 'cousin'")]),
    ({"sessions": [{"id": "a", "messages": [{"content": "x"}]}]}, [("$.sessions[0].messages[0].role", "is required")]),
    ({"sessions": [{"id": "a", "messages": [{"role": "user", "content": 3}]}]},
     [("$.sessions[0].messages[0].content", "must be a string, a list of parts, an object or null, got a number")]),
    ({"sessions": [{"id": "a", "messages": [{"role": "user", "tool_calls": "x"}]}]},
     [("$.sessions[0].messages[0].tool_calls", "must be a list, an object or null, got a string")]),
    ({"sessions": [{"id": "a", "messages": [{"role": "user", "active": "yes"}]}]},
     [("$.sessions[0].messages[0].active", "must be true or false, got a string")]),
    ({"sessions": [{"id": "a", "messages": [{"role": "user", "colour": "red"}]}]},
     [("$.sessions[0].messages[0].colour", "unknown field")]),
])
def test_problem_paths(document, expected) -> None:
    assert problems(document) == expected


def test_yaml_only_values_are_refused_where_json_is_stored() -> None:
    import datetime

    doc = {"sessions": [{"id": "a", "model_config": {"when": datetime.date(2030, 1, 1)},
                         "messages": [{"role": "user", "content": [{"type": "text", "text": {1, 2}}]},
                                      {"role": "assistant", "reasoning_details": [b"raw"]}]}]}
    assert problems(doc) == [
        ("$.sessions[0].model_config.when", "must hold only JSON values, got date"),
        ("$.sessions[0].messages[0].content[0].text", "must hold only JSON values, got set"),
        ("$.sessions[0].messages[1].reasoning_details[0]", "must hold only JSON values, got bytes"),
    ]


def test_all_problems_are_reported_at_once() -> None:
    doc = {"sessions": [{"id": "a", "bogus": 1}, {"id": "b", "messages": [{"role": ""}, "x"]}]}
    assert paths(doc) == ["$.sessions[0].bogus", "$.sessions[1].messages[0].role", "$.sessions[1].messages[1]"]


def test_cross_session_rules() -> None:
    assert problems({"sessions": [{"id": "a"}, {"id": "a"}]}) == [
        ("$.sessions[1].id", "duplicate id 'a' (also at $.sessions[0].id)")]
    assert problems({"sessions": [{"id": "a", "title": "T"}, {"id": "b", "title": "T"}]}) == [
        ("$.sessions[1].title", "duplicate title 'T' (also at $.sessions[0].title)")]
    assert paths({"sessions": [{"id": "a", "parent": "b"}, {"id": "b", "parent": "a"}]}) == ["$.sessions[0].parent"]
    assert paths({"sessions": [{"id": "a", "parent": "a"}]}) == ["$.sessions[0].parent"]
    assert problems({"sessions": [{"id": "t", "parent": "r", "relation": "compression"}, {"id": "r"}]}) == [
        ("$.sessions[0].relation", "parent 'r' must have end_reason 'compression' for a compression continuation")]
    assert paths({"sessions": [{"id": "r", "end_reason": "compression"},
                               {"id": "t", "parent": "r", "relation": "compression", "source": "tool"}]}) == [
        "$.sessions[1].relation"]
    assert problems({"sessions": [{"id": "r"}, {"id": "d", "parent": "r", "relation": "delegate",
                                                 "model_config": {"_delegate_from": "other"}}]}) == [
        ("$.sessions[1].model_config", "_delegate_from is 'other' but relation 'delegate' says 'r'")]


def test_parent_outside_the_fixture_is_left_for_the_database_check() -> None:
    (row,) = parse_fixture({"sessions": [{"id": "c", "parent": "elsewhere"}]}, NOW).sessions
    assert row.parent == "elsewhere"


# -- fault specs ----------------------------------------------------------------

def fault_problems(document) -> list[tuple[str, str]]:
    with pytest.raises(DocumentError) as info:
        FaultRegistry(ROUTES).parse(document)
    return [(p.path, p.message) for p in info.value.problems]


def test_fault_defaults_and_operation_names() -> None:
    registry = FaultRegistry(ROUTES)
    (status, create) = registry.parse({"faults": [{"kind": "status"}, {"kind": "connection_reset", "route": "session_create"}]})
    assert status.id == "f1" and status.times == 1 and status.params["status"] == 503
    assert status.params["code"] == "session_db_unavailable"
    assert status.routes == {"sessions", "session", "session_messages", "session_fork", "session_chat", "session_chat_stream"}
    assert create.routes == {"sessions"} and create.method == "POST"
    (limited,) = registry.parse({"kind": "status", "status": 429, "times": "always"})
    assert limited.times is None and limited.params["headers"] == {"Retry-After": "1"}
    assert limited.params["type"] == "rate_limit_error"


def test_probability_is_repeatable_for_a_seed() -> None:
    def pattern() -> list[bool]:
        from hermes_server.testing.faults import RequestContext

        (fault,) = FaultRegistry(ROUTES).parse({"kind": "status", "times": "always", "probability": 0.5, "seed": 7})
        return [fault.fire(RequestContext("sessions", "GET", None)) for _ in range(40)]

    first = pattern()
    assert first == pattern()
    assert 5 < sum(first) < 35


@pytest.mark.parametrize("document, expected", [
    ({"kind": "explode"}, [("$.kind", "must be one of status, latency, connection_reset, storage_unavailable, "
                                      "disk_full, read_only, io_error, fork_interrupted, fork_paused, history_load_failure, "
                                      "persistence_failure, stream_cut; got 'explode'")]),
    ({"kind": "latency"}, [("$.latency_ms", "is required")]),
    ({"faults": [{"kind": "status", "status": 200}]},
     [("$.faults[0].status", "must be an HTTP error status (400-599), got 200")]),
    ({"faults": [{"kind": "status"}, {"kind": "status", "route": "nowhere"}]},
     [("$.faults[1].route", "unknown route 'nowhere'; use * or one of health, session, session_chat, session_chat_stream, "
                            "session_create, session_delete, session_fork, session_get, session_messages, session_patch, "
                            "sessions, sessions_list")]),
    ({"kind": "fork_interrupted", "after_step": 5}, [("$.after_step", "must be at most 4")]),
    ({"kind": "fork_interrupted"}, [("$.after_step", "is required: 1 to 4")]),
    ({"kind": "fork_interrupted", "after_step": 1, "route": "session_get"},
     [("$.route", "a fork_interrupted fault acts only on session_fork")]),
    ({"kind": "stream_cut", "after_events": 1, "route": "session_chat"},
     [("$.route", "a stream_cut fault acts only on session_chat_stream")]),
    ({"kind": "status", "times": 0}, [("$.times", "must be a positive integer or \"always\", got 0")]),
    ({"kind": "status", "probability": 2}, [("$.probability", "must be at most 1")]),
    ({"kind": "status", "when": "during"}, [("$.when", "must be one of before, after; got 'during'")]),
    ({"kind": "status", "route": "session_get", "method": "POST"}, [("$.method", "operation 'session_get' is always GET")]),
    ({"faults": [{"kind": "status", "id": "x"}, {"kind": "latency", "latency_ms": 1, "id": "x"}]},
     [("$.faults[1].id", "duplicate fault id 'x'")]),
    ({"kind": "latency", "latency_ms": 5, "status": 500}, [("$.status", "unknown field")]),
    ({"faults": {"kind": "status"}}, [("$.faults", "must be a list, got an object")]),
    ({"kind": "status", "headers": {"X-Note": "caf\u00e9 \u2615"}},
     [("$.headers", "must be an object of header names to Latin-1 string values without CR/LF/NUL")]),
    ({"kind": "status", "headers": {"X-Note": "a\r\nSet-Cookie: x"}},
     [("$.headers", "must be an object of header names to Latin-1 string values without CR/LF/NUL")]),
    ([{"kind": "status"}], [("$", "must be an object, got a list")]),
    ({"kind": "fork_paused"}, [("$.after_step", "is required"), ("$.latency_ms", "is required")]),
    ({"kind": "disk_full", "duration_ms": 0}, [("$.duration_ms", "must be at least 1")]),
    ({"kind": "io_error", "route": "session_get", "when": "after"}, [("$.when", "unknown field")]),
])
def test_fault_problem_paths(document, expected) -> None:
    assert fault_problems(document) == expected
