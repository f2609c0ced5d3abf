"""herm.run's pure rules: version resolution, roles, statuses, the allowance window, ids."""

from __future__ import annotations

import pytest

from hermes_server.hermrun.errors import InvalidState, RateLimited, ValidationFailed
from hermes_server.hermrun.rules import (
    Agent,
    Allowance,
    Version,
    Window,
    check_inactive,
    check_role,
    default_agent,
    preview_version,
    resolve_version,
    session_id,
    take_conversation,
)

AGENT = Agent("agent_123", (Version("v1", ("readonly",)), Version("v2"), Version("v3", ("admin",))), "v1",
              {"feature-x": "v2"})
ALLOWANCE = Allowance(5, 60.0)


def test_production_by_default() -> None:
    assert resolve_version(AGENT, preview=False, tag=None).id == "v1"


def test_preview_is_the_last_version_published_after_production() -> None:
    assert resolve_version(AGENT, preview=True, tag=None).id == "v3"
    promoted = Agent("a", AGENT.versions, "v3")
    assert preview_version(promoted).id == "v3"  # nothing newer than production: production itself
    middle = Agent("a", AGENT.versions, "v2")
    assert preview_version(middle).id == "v3"


def test_a_tag_pins_its_target() -> None:
    assert resolve_version(AGENT, preview=False, tag="feature-x").id == "v2"


def test_an_unknown_tag_is_a_validation_error() -> None:
    with pytest.raises(ValidationFailed) as caught:
        resolve_version(AGENT, preview=False, tag="nope")
    assert caught.value.param == "tag"
    assert caught.value.message == "tag 'nope' is not a development tag of agent 'agent_123'"


def test_roles_come_from_the_recorded_version() -> None:
    check_role(AGENT, AGENT.versions[0], "readonly")
    check_role(AGENT, AGENT.versions[1], None)
    with pytest.raises(ValidationFailed) as caught:
        check_role(AGENT, AGENT.versions[1], "readonly")
    assert (caught.value.status, caught.value.type, caught.value.param) == (400, "validation_error", "role")
    assert caught.value.message == "role 'readonly' is not defined by version 'v2' of agent 'agent_123'"


def test_the_default_agent_has_one_production_version_without_roles() -> None:
    agent = default_agent("anything")
    assert [v.id for v in agent.versions] == ["v1"] and agent.production == "v1"
    assert agent.versions[0].roles == () and dict(agent.tags) == {}


@pytest.mark.parametrize("status", ["idle", "archived"])
def test_inactive_sessions_may_be_archived_or_deleted(status: str) -> None:
    check_inactive("s", status, "archived")


@pytest.mark.parametrize("status", ["running", "waiting_on_human"])
def test_active_sessions_are_refused(status: str) -> None:
    with pytest.raises(InvalidState) as caught:
        check_inactive("s", status, "deleted")
    assert (caught.value.status, caught.value.type) == (409, "invalid_state")
    assert caught.value.message == f"session 's' is {status}; it cannot be deleted while a turn is active"


def test_the_first_create_starts_a_window() -> None:
    assert take_conversation(100.0, None, ALLOWANCE) == Window(100.0, 1)


def test_creates_count_within_the_window_and_the_sixth_is_refused() -> None:
    window = None
    for i in range(5):
        window = take_conversation(100.0 + i, window, ALLOWANCE)
    assert window == Window(100.0, 5)
    with pytest.raises(RateLimited) as caught:
        take_conversation(110.0, window, ALLOWANCE)
    assert caught.value.status == 429 and caught.value.type == "rate_limited"
    assert caught.value.headers == {"Retry-After": "50"}


@pytest.mark.parametrize("now, expected", [(100.0, 60), (100.001, 60), (159.0, 1), (159.5, 1), (130.2, 30)])
def test_retry_after_is_the_whole_seconds_to_the_window_end(now: float, expected: int) -> None:
    with pytest.raises(RateLimited) as caught:
        take_conversation(now, Window(100.0, 5), ALLOWANCE)
    assert caught.value.retry_after == expected


def test_the_window_ends_exactly_after_its_length() -> None:
    assert take_conversation(160.0, Window(100.0, 5), ALLOWANCE) == Window(160.0, 1)


def test_a_clock_moved_back_starts_a_new_window() -> None:
    assert take_conversation(50.0, Window(100.0, 5), ALLOWANCE) == Window(50.0, 1)


def test_a_zero_allowance_refuses_every_create() -> None:
    with pytest.raises(RateLimited) as caught:
        take_conversation(0.0, None, Allowance(0, 30.0))
    assert caught.value.retry_after == 30


def test_session_ids() -> None:
    assert session_id(1) == "session_0000000000000001"
    assert session_id(255) == "session_00000000000000ff"
    random_id = session_id(None)
    assert random_id.startswith("session_") and len(random_id) == len("session_") + 16
    assert random_id != session_id(None)
