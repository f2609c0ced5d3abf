"""Chat input rules (spec §4.8.3, vectors T81–T95) and history conversion, as pure functions."""

from __future__ import annotations

import pytest

from hermes_server.domain.content import (
    ContentError,
    conversation_history,
    extract_user_message,
    has_visible_payload,
    message_text,
    normalize_content,
    stored_user_content,
    system_instruction,
)

FILE_MSG = ("Inline image inputs are supported, but uploaded files and document inputs are not "
            "supported on this endpoint.")
SCHEME_MSG = "Image inputs must use http(s) URLs or data:image/... URLs."
DATA_MSG = "Only image data URLs are supported. Non-image data payloads are not supported."
EMPTY_URL_MSG = "Image parts must include a non-empty image URL."
DETAIL_MSG = "Image detail must be a non-empty string when provided."


def refused(body: dict) -> ContentError:
    with pytest.raises(ContentError) as info:
        extract_user_message(body)
    return info.value


def image(url, **extra):
    return {"type": "image_url", "image_url": {"url": url, **extra}}


# -- visibility -----------------------------------------------------------------

@pytest.mark.parametrize("raw, visible", [
    ("hi", True), ("   ", False), ("", False), (None, False), (5, False), (True, False),
    ({"text": "hi"}, False), (["hello"], False), ([], False),
    ([{"type": "text", "text": "a"}], True),
    ([{"type": " TEXT ", "text": "a"}], True),
    ([{"type": "input_text", "text": "a"}], True),
    ([{"type": "output_text", "text": "a"}], True),
    ([{"type": "text", "text": "  "}], False),
    ([{"type": "text", "text": 0}], False),
    ([{"type": "text", "text": 5}], True),
    ([{"type": "text"}], False),
    ([{"type": "image_url"}], True),
    ([{"type": "input_image", "image_url": 5}], True),
    ([{"type": "file", "file_id": "x"}], False),
    ([{"type": "audio"}], False),
    ([7] * 1500 + [{"type": "text", "text": "late"}], True),
])
def test_visibility(raw, visible) -> None:
    assert has_visible_payload(raw) is visible


# -- missing_message (param null) -------------------------------------------------

@pytest.mark.parametrize("body", [
    {},
    {"message": "   ", "input": "x"},          # T82: whitespace message blocks the input fallback
    {"prompt": "x"}, {"query": "x"},           # T83
    {"message": ["hello"]},                     # T84
    {"message": {"text": "hi"}}, {"message": 5},  # T84b
    {"message": [{"type": "input_file"}]},      # T85b
    {"message": None, "input": "  "},
])
def test_missing_message(body) -> None:
    err = refused(body)
    assert (err.code, err.message, err.param) == ("missing_message", "Missing 'message' field", None)


def test_falsy_message_falls_back_to_input() -> None:
    assert extract_user_message({"message": "", "input": "x"}) == "x"  # T82b
    assert extract_user_message({"message": [], "input": "y"}) == "y"
    assert extract_user_message({"message": 0, "input": "z"}) == "z"


# -- content-part errors (param "message") -----------------------------------------

@pytest.mark.parametrize("parts, code, message", [
    ([{"type": "text", "text": "a"}, {"type": "file", "file_id": "x"}], "unsupported_content_type", FILE_MSG),  # T85
    ([{"type": "text", "text": "a"}, {"type": "input_file"}], "unsupported_content_type", FILE_MSG),
    ([{"type": "text", "text": "a"}, {"type": "audio"}], "unsupported_content_type",
     "Unsupported content part type 'audio'. Only text and image_url/input_image parts are supported."),  # T86
    ([{"type": "text", "text": "a"}, {"text": "b"}], "unsupported_content_type",
     "Unsupported content part type None. Only text and image_url/input_image parts are supported."),
    ([{"type": "text", "text": "a"}, {"type": 5}], "unsupported_content_type",
     "Unsupported content part type 5. Only text and image_url/input_image parts are supported."),
    ([image("ftp://x")], "invalid_image_url", SCHEME_MSG),  # T87
    ([image("x.png")], "invalid_image_url", SCHEME_MSG),
    ([image("data:text/plain,abc")], "unsupported_content_type", DATA_MSG),  # T88
    ([{"type": "input_image", "image_url": "data:image/png;base64"}], "unsupported_content_type", DATA_MSG),  # T88b
    ([image("  ")], "invalid_image_url", EMPTY_URL_MSG),  # T89
    ([{"type": "image_url"}], "invalid_image_url", EMPTY_URL_MSG),
    ([{"type": "image_url", "image_url": {"url": 5}}], "invalid_image_url", EMPTY_URL_MSG),
    ([image("https://x/y.png", detail="")], "invalid_content_part", DETAIL_MSG),  # T90
    ([image("https://x/y.png", detail=" ")], "invalid_content_part", DETAIL_MSG),
    ([image("https://x/y.png", detail=5)], "invalid_content_part", DETAIL_MSG),
    ([{"type": "input_image", "image_url": "https://x", "detail": ""}], "invalid_content_part", DETAIL_MSG),
])
def test_content_part_errors(parts, code, message) -> None:
    err = refused({"message": parts})
    assert (err.code, err.message, err.param) == (code, message, "message")


# -- normalisation ---------------------------------------------------------------

def test_image_parts_are_canonicalised() -> None:  # T91
    parts = [{"type": "text", "text": "look"},
             {"type": "input_image", "image_url": " HTTPS://x/y.png ", "detail": "low"}]
    assert extract_user_message({"message": parts}) == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "HTTPS://x/y.png", "detail": "low"}},
    ]


def test_image_detail_precedence() -> None:
    inner_wins = {"type": "image_url", "image_url": {"url": "http://a", "detail": " high "}, "detail": "low"}
    explicit_null = {"type": "image_url", "image_url": {"url": "http://a", "detail": None}, "detail": "low"}
    outer_used = {"type": "image_url", "image_url": {"url": "http://a"}, "detail": "low"}
    assert normalize_content([inner_wins])[0]["image_url"] == {"url": "http://a", "detail": "high"}
    assert normalize_content([explicit_null])[0]["image_url"] == {"url": "http://a"}
    assert normalize_content([outer_used])[0]["image_url"] == {"url": "http://a", "detail": "low"}


def test_data_urls_keep_their_case() -> None:
    url = "DATA:IMAGE/PNG;base64,AAAA"
    assert normalize_content([image(url)]) == [{"type": "image_url", "image_url": {"url": url}}]


def test_text_only_lists_join_with_newlines() -> None:  # T92
    raw = ["a", {"type": "input_text", "text": "b"}, {"type": "output_text", "text": 5}, 7, None,
           {"type": "text", "text": None}, {"type": "text", "text": ""}, ""]
    assert extract_user_message({"message": raw}) == "a\nb\n5"


def test_bare_strings_become_text_parts_next_to_images() -> None:
    assert normalize_content(["a", image("http://x")]) == [
        {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "http://x"}}]


def test_silent_truncations() -> None:
    assert len(extract_user_message({"message": "x" * 70_000})) == 65_536  # T93
    joined = extract_user_message({"message": [{"type": "text", "text": "y" * 70_000}, "z" * 70_000]})
    assert joined == "y" * 65_536 + "\n" + "z" * 65_536  # per part, no aggregate cap


def test_only_the_first_thousand_items_are_examined() -> None:
    tail_ignored = [{"type": "text", "text": "t"}] * 1_000 + [{"type": "audio"}, image("ftp://x")]
    assert extract_user_message({"message": tail_ignored}) == "\n".join(["t"] * 1_000)
    # Visible only beyond item 1,000: passes the check, normalises to "".
    assert extract_user_message({"message": [7] * 1_000 + [{"type": "text", "text": "late"}]}) == ""


def test_lone_surrogates_become_replacement_characters() -> None:
    assert extract_user_message({"message": "a\ud800b"}) == "a\ufffdb"
    assert extract_user_message({"message": [{"type": "text", "text": "\udfff"}]}) == "\ufffd"


# -- system instruction -----------------------------------------------------------

@pytest.mark.parametrize("body, expected", [
    ({}, None),
    ({"system_message": ""}, None),
    ({"system_message": "", "instructions": "be brief"}, "be brief"),  # T95
    ({"system_message": "S", "instructions": "I"}, "S"),  # T95b
    ({"system_message": 0, "instructions": "x"}, "x"),
    ({"instructions": None}, None),
])
def test_system_instruction(body, expected) -> None:
    assert system_instruction(body) == expected


@pytest.mark.parametrize("body", [
    {"system_message": 5},  # T94
    {"instructions": 5},  # T94b
    {"system_message": "", "instructions": 0},
    {"system_message": ["x"]},
])
def test_system_instruction_must_be_a_string(body) -> None:
    with pytest.raises(ContentError) as info:
        system_instruction(body)
    assert (info.value.code, info.value.message, info.value.param) == (
        "invalid_system_message", "system_message must be a string", None)


# -- what is stored, what the echo agent quotes -------------------------------------

def test_stored_user_content() -> None:
    assert stored_user_content("  as sent  ") == "  as sent  "
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "http://x"}},
             {"type": "text", "text": "more"}]
    assert stored_user_content(parts) == "look\n[screenshot]\nmore"
    assert stored_user_content([parts[1]]) == "[screenshot]"
    assert message_text(parts) == "look more"


# -- history -----------------------------------------------------------------------

def test_conversation_history_cleans_and_filters() -> None:
    rows = [
        {"role": "user", "content": "  <memory-context>secret recall</memory-context> hello  "},
        {"role": "assistant", "content": " hi ", "finish_reason": "stop", "reasoning": None},
        {"role": "user", "content": "Review the conversation above and consider saving to memory."},
        {"role": "assistant", "content": "curator reply"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}], "finish_reason": "tool_calls"},
        {"role": "tool", "content": "  raw result  ", "tool_call_id": "c1", "tool_name": "search"},
        {"role": "user", "content": [{"type": "text", "text": " parts stay "}]},
    ]
    assert conversation_history(rows) == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi", "finish_reason": "stop"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}], "finish_reason": "tool_calls"},
        {"role": "tool", "content": "  raw result  ", "tool_call_id": "c1", "tool_name": "search"},
        {"role": "user", "content": [{"type": "text", "text": " parts stay "}]},
    ]
