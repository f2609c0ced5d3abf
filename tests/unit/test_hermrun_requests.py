"""herm.run request checking: each refusal names its field, in the documented order."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_server.hermrun.errors import ValidationFailed
from hermes_server.hermrun.requests import (
    CreateRequest,
    ListQuery,
    UpdateRequest,
    decode_body,
    parse_create,
    parse_list,
    parse_update,
    parse_warm,
)

BASE = {"agentId": "agent_123", "subjectId": "user_1"}


def refusal(fn: Any, value: Any) -> tuple[str, str | None]:
    with pytest.raises(ValidationFailed) as caught:
        fn(value)
    assert caught.value.status == 400 and caught.value.type == "validation_error"
    return caught.value.message, caught.value.param


def test_a_full_create() -> None:
    body = {**BASE, "role": "readonly", "title": "Holiday campaign", "yoloMode": True,
            "metadata": {"campaignId": "camp_456"}, "unknown": 1}
    assert parse_create(body) == CreateRequest("agent_123", "user_1", "readonly", "Holiday campaign", True, False,
                                               None, {"campaignId": "camp_456"})


def test_create_defaults_and_nulls_count_as_absent() -> None:
    expected = CreateRequest("agent_123", "user_1")
    assert parse_create(BASE) == expected
    assert parse_create({**BASE, "role": None, "title": None, "yoloMode": None, "preview": None, "tag": None,
                         "metadata": None}) == expected


@pytest.mark.parametrize("body, message, param", [
    ({}, "agentId is required", "agentId"),
    ({"agentId": None, "subjectId": "u"}, "agentId is required", "agentId"),
    ({"agentId": 5, "subjectId": "u"}, "agentId must be a string", "agentId"),
    ({"agentId": "", "subjectId": "u"}, "agentId must not be empty", "agentId"),
    ({"agentId": "  ", "subjectId": "u"}, "agentId must not be empty", "agentId"),
    ({"agentId": "a"}, "subjectId is required", "subjectId"),
    ({"agentId": "a", "subjectId": ["u"]}, "subjectId must be a string", "subjectId"),
    ({**BASE, "role": ""}, "role must not be empty", "role"),
    ({**BASE, "title": 5}, "title must be a string", "title"),
    ({**BASE, "title": "\ud800"}, "title contains an unpaired UTF-16 surrogate", "title"),
    ({**BASE, "yoloMode": "true"}, "yoloMode must be a boolean", "yoloMode"),
    ({**BASE, "preview": 1}, "preview must be a boolean", "preview"),
    ({**BASE, "tag": 5}, "tag must be a string", "tag"),
    ({**BASE, "metadata": []}, "metadata must be an object", "metadata"),
    ({**BASE, "metadata": {"n": 1}}, "metadata values must be strings (key 'n' is not)", "metadata"),
    ({**BASE, "metadata": {"k": "\udfff"}},
     "metadata key 'k' or its value contains an unpaired UTF-16 surrogate", "metadata"),
    ({**BASE, "preview": True, "tag": "feature-x"}, "preview: true and tag are mutually exclusive", "tag"),
])
def test_create_refusals(body: dict[str, Any], message: str, param: str) -> None:
    assert refusal(parse_create, body) == (message, param)


def test_preview_false_with_a_tag_is_fine() -> None:
    assert parse_create({**BASE, "preview": False, "tag": "feature-x"}).tag == "feature-x"


def test_update_needs_one_field() -> None:
    assert parse_update({"title": "t"}) == UpdateRequest("t")
    assert parse_update({"yoloMode": False}) == UpdateRequest(None, False)
    assert parse_update({"metadata": {}}) == UpdateRequest(None, None, {})
    for body in ({}, {"title": None}, {"other": 1}):
        assert refusal(parse_update, body) == ("at least one of title, yoloMode or metadata is required", None)
    assert refusal(parse_update, {"yoloMode": "no"}) == ("yoloMode must be a boolean", "yoloMode")


def test_warm() -> None:
    assert parse_warm({**BASE, "preview": True}).agent_id == "agent_123"
    assert refusal(parse_warm, {"subjectId": "u"}) == ("agentId is required", "agentId")
    assert refusal(parse_warm, {"agentId": "a", "subjectId": ""}) == ("subjectId must not be empty", "subjectId")


@pytest.mark.parametrize("raw, message", [
    (b"", "request body must be valid JSON"), (b"{", "request body must be valid JSON"),
    (b"\xff", "request body must be valid JSON"), (b"[" * 100_000, "request body must be valid JSON"),
    (b"[]", "request body must be a JSON object"), (b"null", "request body must be a JSON object"),
])
def test_bodies(raw: bytes, message: str) -> None:
    assert refusal(decode_body, raw) == (message, None)


def test_list_defaults_and_filters() -> None:
    assert parse_list({}) == ListQuery()
    assert parse_list({"agent": "a", "subject": "s", "status": "running", "limit": "100", "offset": "7"}) == \
        ListQuery("a", "s", "running", 100, 7)
    assert parse_list({"agentId": "a", "agent": "a"}).agent_id == "a"
    assert parse_list({"offset": str(10**30)}).sql_offset == 2**62


@pytest.mark.parametrize("query, message, param", [
    ({"agentId": "a", "agent": "b"}, "agent and agentId must match when both are given", "agent"),
    ({"subjectId": "a", "subject": "b"}, "subject and subjectId must match when both are given", "subject"),
    ({"agentId": ""}, "agentId must not be empty", "agentId"),
    ({"status": "waiting_on_human"},
     "status waiting_on_human is not accepted as a list filter; use idle, running or archived", "status"),
    ({"status": "deleted"}, "status must be one of idle, running, archived", "status"),
    ({"status": ""}, "status must be one of idle, running, archived", "status"),
    ({"limit": "0"}, "limit must be an integer from 1 to 100", "limit"),
    ({"limit": "101"}, "limit must be an integer from 1 to 100", "limit"),
    ({"limit": "+5"}, "limit must be an integer from 1 to 100", "limit"),
    ({"limit": "5.0"}, "limit must be an integer from 1 to 100", "limit"),
    ({"limit": ""}, "limit must be an integer from 1 to 100", "limit"),
    ({"offset": "-1"}, "offset must be a non-negative integer", "offset"),
    ({"offset": "x"}, "offset must be a non-negative integer", "offset"),
])
def test_list_refusals(query: dict[str, str], message: str, param: str) -> None:
    assert refusal(parse_list, query) == (message, param)


def test_numbers_longer_than_int_reads_are_bounds_not_crashes() -> None:
    """int() refuses strings of over 4,300 digits; such a number is past every bound, never a 500."""
    assert parse_list({"offset": "9" * 5000}).offset > 2**62
    assert parse_list({"offset": "0" * 5000 + "7"}).offset == 7
    with pytest.raises(ValidationFailed, match="limit must be"):
        parse_list({"limit": "1" * 5000})
