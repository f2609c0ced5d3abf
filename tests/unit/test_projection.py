"""The client-safe projections (spec §3.6, §4.6.4) and message content decoding."""

from __future__ import annotations

from hermes_server.domain.projection import (
    MESSAGE_KEYS,
    SESSION_KEYS,
    decode_content,
    decode_tool_calls,
    encode_content,
    message_projection,
    session_projection,
)

FULL_ROW = {
    "id": "A", "source": "api_server", "user_id": None, "session_key": "secret", "model": "m",
    "model_config": '{"x": 1}', "system_prompt": "sp", "parent_session_id": None, "started_at": 1.5,
    "ended_at": None, "end_reason": None, "message_count": 2, "tool_call_count": 0, "input_tokens": 1,
    "output_tokens": 2, "cache_read_tokens": 3, "cache_write_tokens": 4, "reasoning_tokens": 5,
    "cwd": "/tmp", "billing_provider": "p", "estimated_cost_usd": None, "actual_cost_usd": 0.5,
    "title": "T", "api_call_count": 1, "archived": 1, "rewind_count": 0,
}


def test_session_projection_keys_and_order() -> None:
    out = session_projection(FULL_ROW)
    assert list(out) == [
        "id", "source", "user_id", "model", "title", "started_at", "ended_at", "end_reason",
        "message_count", "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens",
        "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd",
        "api_call_count", "parent_session_id", "has_system_prompt", "has_model_config",
    ]
    assert out["has_system_prompt"] is True and out["has_model_config"] is True
    for hidden in ("system_prompt", "model_config", "cwd", "session_key", "billing_provider", "archived"):
        assert hidden not in out


def test_list_keys_only_when_present() -> None:
    row = {**FULL_ROW, "last_active": 9.0, "preview": "p", "_lineage_root_id": "R"}
    out = session_projection(row)
    assert list(out)[-5:] == ["last_active", "preview", "_lineage_root_id", "has_system_prompt", "has_model_config"]
    assert "_lineage_root_id" not in session_projection({**FULL_ROW, "last_active": 9.0, "preview": ""})


def test_has_flags_follow_truthiness() -> None:
    assert session_projection({"system_prompt": "", "model_config": None}) == {
        "has_system_prompt": False, "has_model_config": False}
    assert session_projection({"system_prompt": " ", "model_config": "{}"})["has_model_config"] is True


def test_session_key_list_is_upstreams() -> None:
    assert SESSION_KEYS[-3:] == ("last_active", "preview", "_lineage_root_id")
    assert len(SESSION_KEYS) == 22


def test_message_projection_has_all_twelve_keys() -> None:
    row = {"id": 1, "session_id": "A", "role": "user", "content": "x", "timestamp": 1.0, "active": 1,
           "api_content": "secret", "reasoning_details": "[]", "observed": 0}
    out = message_projection(row)
    assert tuple(out) == MESSAGE_KEYS
    assert out["tool_calls"] is None and out["reasoning"] is None
    assert "api_content" not in out and "active" not in out
    assert message_projection(row, sparse=True) == {"id": 1, "session_id": "A", "role": "user", "content": "x",
                                                    "timestamp": 1.0}


def test_content_round_trip_and_fallbacks() -> None:
    parts = [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "http://x"}}]
    stored = encode_content(parts)
    assert stored.startswith("\x00json:")
    assert decode_content(stored) == parts
    assert decode_content("\x00json:{broken") == "\x00json:{broken"
    assert decode_content('\x00json:"text"') == "text"
    assert decode_content("  raw  ") == "  raw  "
    assert decode_content(None) is None and decode_content(42) == 42
    assert encode_content("plain") == "plain"


def test_tool_calls_decoding() -> None:
    assert decode_tool_calls('[{"id": "c1"}]') == [{"id": "c1"}]
    assert decode_tool_calls("not json") == []
    assert decode_tool_calls('{"a": 1}') == {"a": 1}
    assert decode_tool_calls(None) is None
    assert decode_tool_calls("") == ""
