"""The messages-array rules of /v1/chat/completions, as pure functions.

Expected session ids were computed with upstream 0.19.0's own derivation for the
same inputs (and observed on the oracle: `api-51d389c0809fbe12`, `api-9fdeac5f578bbc4f`).
"""

from __future__ import annotations

import pytest

from hermes_server.domain.openai_messages import (
    MISSING_MESSAGES,
    NO_USER_MESSAGE,
    Conversation,
    MessagesError,
    continued_session_id,
    derived_session_id,
    flatten_text,
    parse_messages,
    request_bool,
    request_fingerprint,
)

IMAGE = {"type": "image_url", "image_url": {"url": "https://e.x/a.png", "detail": "low"}}


def refused(messages) -> MessagesError:
    with pytest.raises(MessagesError) as info:
        parse_messages({"messages": messages} if messages is not ... else {})
    return info.value


def user(content) -> dict:
    return {"role": "user", "content": content}


# -- the array and its messages ---------------------------------------------------

@pytest.mark.parametrize("messages", [..., None, [], {}, "hi", 0, {"role": "user", "content": "x"}])
def test_missing_or_not_a_list(messages):
    err = refused(messages)
    assert (err.message, err.code, err.param, err.bare) == (MISSING_MESSAGES, None, None, True)


@pytest.mark.parametrize("messages", [
    [{"role": "system", "content": "only a system message"}],
    [user("   ")],
    [user(None)],
    [user([])],
    [user([{"type": "text", "text": " "}, ""])],
    [{"role": "developer", "content": "x"}, {"role": "tool", "content": "y"}],
    [user("hello"), {"role": "assistant", "content": ""}],  # the LAST user/assistant message is the turn
    [{"role": 1, "content": "numbers are no role"}],
])
def test_no_user_message(messages):
    err = refused(messages)
    assert (err.message, err.bare) == (NO_USER_MESSAGE, True)


@pytest.mark.parametrize("messages, param", [
    (["hi"], "messages[0]"),
    ([user("ok"), None], "messages[1]"),
    ([user("ok"), 5], "messages[1]"),
    ([{"role": ["user"], "content": "x"}], "messages[0].role"),
    ([user("ok"), {"role": {"r": 1}, "content": "x"}], "messages[1].role"),
])
def test_d6_malformed_messages_name_the_field(messages, param):
    err = refused(messages)
    assert (err.param, err.code, err.bare) == (param, None, False)


@pytest.mark.parametrize("content, code, message", [
    ([{"type": "file", "file": {}}], "unsupported_content_type",
     "Inline image inputs are supported, but uploaded files and document inputs are not supported on this endpoint."),
    ([{"type": "audio"}], "unsupported_content_type",
     "Unsupported content part type 'audio'. Only text and image_url/input_image parts are supported."),
    ([{"type": "image_url", "image_url": {"url": "ftp://x"}}], "invalid_image_url",
     "Image inputs must use http(s) URLs or data:image/... URLs."),
    ([{"type": "image_url", "image_url": {}}], "invalid_image_url", "Image parts must include a non-empty image URL."),
    ([{"type": "image_url", "image_url": "data:text/plain,abc"}], "unsupported_content_type",
     "Only image data URLs are supported. Non-image data payloads are not supported."),
    ([{"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": ""}}], "invalid_content_part",
     "Image detail must be a non-empty string when provided."),
])
def test_bad_content_parts_name_the_message(content, code, message):
    err = refused([{"role": "system", "content": "s"}, user("first"), {"role": "assistant", "content": content}])
    assert (err.message, err.code, err.param, err.bare) == (message, code, "messages[2].content", False)


def test_the_first_problem_in_array_order_wins():
    # A bad part before a malformed message, and before the missing-user check.
    assert refused([user([{"type": "zzz"}]), "not an object"]).param == "messages[0].content"
    assert refused(["not an object", user([{"type": "zzz"}])]).param == "messages[0]"
    assert refused([{"role": "assistant", "content": [{"type": "file"}]}]).code == "unsupported_content_type"


def test_system_content_is_never_validated_as_parts():
    convo = parse_messages({"messages": [{"role": "system", "content": [{"type": "zzz"}, IMAGE]}, user("x")]})
    assert convo.system == "" and convo.instruction is None


# -- what a valid array means -------------------------------------------------------

def test_roles_turn_and_history():
    convo = parse_messages({"messages": [
        {"role": "system", "content": "be"},
        {"role": "developer", "content": "ignored"},
        user("one"),
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, "b"]},
        {"role": "tool", "content": "ignored"},
        {"role": "system", "content": ["nice", {"type": "input_text", "text": "!"}]},
        user([{"type": "text", "text": "look"}, IMAGE]),
    ]})
    assert convo.system == "be\nnice\n!"
    assert convo.instruction == "be\nnice\n!"
    assert convo.history == [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a\nb"}]
    assert convo.user_message == [{"type": "text", "text": "look"}, IMAGE]


def test_an_assistant_message_last_is_the_turn():
    convo = parse_messages({"messages": [user("q"), {"role": "assistant", "content": "said last"}]})
    assert convo.user_message == "said last" and convo.history == [{"role": "user", "content": "q"}]


@pytest.mark.parametrize("content, text", [(5, "5"), ({"a": 1}, "{'a': 1}"), (True, "True"), ("x\ud800", "x\ufffd")])
def test_scalar_content_is_stringified(content, text):
    assert parse_messages({"messages": [user(content)]}).user_message == text


def test_bare_strings_in_a_list_are_a_visible_turn():
    # Unlike session chat's `message`, visibility is judged after normalising (as upstream).
    assert parse_messages({"messages": [user(["bare string"])]}).user_message == "bare string"


def test_flatten_text():
    assert flatten_text([["x", {"type": "text", "text": "y"}], {"type": "image_url"}, "z", 5,
                         {"type": "INPUT_TEXT", "text": 7}]) == "x\ny\nz\n7"
    assert flatten_text(None) == "" and flatten_text(3.5) == "3.5" and flatten_text("s\udc80") == "s\ufffd"
    deep: list = ["bottom"]
    for _ in range(11):
        deep = [deep]
    assert flatten_text(deep) == ""
    assert flatten_text(deep[0]) == "bottom"
    # Reading stops once 65,536 characters are collected.
    assert flatten_text(["a" * 65_536, "more"]) == "a" * 65_536
    assert flatten_text(["a" * 70_000]) == "a" * 65_536


# -- sessions -------------------------------------------------------------------

@pytest.mark.parametrize("system, first, expected", [
    ("be nice", "hello there", "api-51d389c0809fbe12"),
    (None, "x", "api-bbe56d7c2d0f1f72"),
    (None, "fresh first", "api-9fdeac5f578bbc4f"),
    ("a\nb", "q", "api-1f37c177719e7fe2"),
])
def test_derived_session_id_matches_upstream(system, first, expected):
    assert derived_session_id(Conversation(system, [user(first)])) == expected


def test_derived_id_uses_the_first_user_message_and_formats_parts_like_python():
    mm = [{"type": "text", "text": "look"}, IMAGE]
    assert derived_session_id(Conversation(None, [user(mm)])) == "api-decb13a9ef8b9514"
    later = Conversation("be nice", [{"role": "assistant", "content": "hi"}, user("hello there"), user("next")])
    assert derived_session_id(later) == "api-51d389c0809fbe12"
    # An empty system text and no system message give the same id.
    assert derived_session_id(Conversation("", [user("x")])) == "api-bbe56d7c2d0f1f72"


@pytest.mark.parametrize("raw, expected", [
    ("s1", "s1"), ("  padded id ", "padded id"), ("", None), ("   ", None), ("a\tb", "a\tb"),
    ("é-sid", "é-sid"), ("b" * 256, "b" * 256), ("1:x", "1:x"), ("ab:", "ab:"),
])
def test_continued_session_id_accepts(raw, expected):
    assert continued_session_id(raw) == expected


@pytest.mark.parametrize("raw, message", [
    ("a..b", "Invalid session ID"), ("a/b", "Invalid session ID"), ("a\\b", "Invalid session ID"),
    ("c:x", "Invalid session ID"), ("x:y", "Invalid session ID"), ("é:", "Invalid session ID"), ("a\x00b", "Invalid session ID"),
    ("a\rb", "Invalid session ID"), ("a\udcffb", "Invalid session ID"), ("b" * 257, "Session ID too long"),
    ("../" + "b" * 300, "Invalid session ID"),
])
def test_continued_session_id_refuses(raw, message):
    with pytest.raises(MessagesError) as info:
        continued_session_id(raw)
    assert (info.value.message, info.value.bare) == (message, True)


# -- request fields ---------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), (None, False), (1, True), (0, False), (0.5, True), ("true", True),
    (" YES ", True), ("on", True), ("1", True), ("false", False), ("off", False), ("maybe", False),
    ([1], False), ({}, False),
])
def test_request_bool(value, expected):
    assert request_bool(value) is expected


def test_request_bool_default_for_unknown_values():
    assert request_bool("maybe", default=True) is True and request_bool(None, default=True) is True


def test_fingerprint_covers_only_the_request_shape():
    base = {"model": "m", "messages": [user("x")], "stream": False}
    same = {**base, "temperature": 2, "user": "u"}
    assert request_fingerprint(base) == request_fingerprint(same)
    for changed in ({**base, "model": "n"}, {**base, "messages": [user("y")]}, {**base, "tools": []},
                    {**base, "tool_choice": "auto"}, {**base, "stream": None}):
        assert request_fingerprint(changed) != request_fingerprint(base)
    assert request_fingerprint({"messages": ["\ud800"]})  # lone surrogates do not break it
