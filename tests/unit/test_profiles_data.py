"""The version profiles' data (domain/profiles.py) and the model-lock rules (domain/model_lock.py),
checked against the sources of /work/shared/spec/hermes-after-0.19.md."""

from __future__ import annotations

import pytest

from hermes_server.domain.model_lock import Inventory, LockRefused, LockRequest
from hermes_server.domain.profiles import FEATURES_0_20, HERMES_0_19, PROFILES, Addition

# §1.3 "GET /v1/capabilities features" [R V4, probe id 69205319349]: 0.21.2's feature keys in its
# order, without the object-valued runs_idempotency and browser_extension_control, and `cors`
# (which the server appends from its configuration, as 0.19.0 does).
V4_FEATURE_ORDER = [
    "chat_completions", "chat_completions_streaming", "responses_api", "responses_streaming", "run_submission",
    "run_status", "run_events_sse", "run_stop", "run_steer", "run_approval_response", "tool_progress_events",
    "approval_events", "session_resources", "model_options", "session_chat", "session_chat_streaming",
    "session_fork", "session_model_lock", "admin_config_rw", "jobs_admin", "memory_write_api", "skills_api",
    "audio_api", "realtime_voice", "session_continuity_header", "session_key_header",
]


def test_newer_features_follow_the_0_21_2_probe() -> None:
    assert [name for name, _ in FEATURES_0_20] == V4_FEATURE_ORDER


def test_the_default_profile_adds_nothing() -> None:
    assert HERMES_0_19.units == () and list(PROFILES) == ["0.19.0", "0.20.4", "0.21.2"]
    assert all(Addition.GATEWAY_AUTH in PROFILES[v].units for v in ("0.20.4", "0.21.2"))


def test_inventory_lists_the_agent_model_when_it_differs() -> None:
    assert Inventory.of("openai", "hermes-agent", "gpt-x").models == ("hermes-agent", "gpt-x")
    assert Inventory.of("openai", "m", "m").models == ("m",)
    assert Inventory.of("echo", "m", None).payload()["providers"][0]["total_models"] == 1


def test_lock_request_rules() -> None:
    inventory = Inventory.of("openai", "hermes-agent", "gpt-x")
    assert LockRequest.parse({"model": "openai::gpt-x"}).route(inventory) == ("openai", "gpt-x")
    assert LockRequest.parse({"provider_id": "openai"}).route(inventory) == ("openai", "hermes-agent")
    with pytest.raises(LockRefused) as refused:
        LockRequest.parse({"model": " ", "model_id": ""})
    assert (refused.value.status, refused.value.code) == (400, "missing_model")
    with pytest.raises(LockRefused) as refused:
        LockRequest.parse({"model": "other"}).route(inventory)
    assert (refused.value.status, refused.value.code) == (409, "model_lock_unavailable")
    with pytest.raises(LockRefused) as refused:
        LockRequest.parse({"model": ["x"]})
    assert refused.value.param == "model"
    assert LockRequest.parse({"model": "m", "model_options": 5}).model_options == {}
