"""Session id selection and the create/fork id rules (spec §4.2.1 steps 4-6, §4.7.1, D3, D6)."""

from __future__ import annotations

import re

import pytest

from hermes_server.domain.ids import (
    create_id_error,
    fork_id_error,
    generate_session_id,
    has_control_character,
    is_path_unsafe,
    requested_id,
)

INVALID = "Invalid session ID"
TOO_LONG = "Session ID too long"


def test_generated_id_shape() -> None:
    assert generate_session_id(1796065198.9, lambda: "26c8d86a") == "api_1796065198_26c8d86a"
    assert re.fullmatch(r"api_1796065198_[0-9a-f]{8}", generate_session_id(1796065198.2))
    assert generate_session_id(1.0) != generate_session_id(1.0)


@pytest.mark.parametrize(
    ("body", "chosen"),
    [
        ({}, None),
        ({"id": ""}, None),
        ({"id": 0}, None),
        ({"id": False}, None),
        ({"id": []}, None),
        ({"id": None}, None),
        ({"id": {}}, None),
        ({"id": 123}, "123"),
        ({"id": True}, "True"),
        ({"id": 1.5}, "1.5"),
        ({"id": [1]}, "[1]"),
        ({"id": {"a": 1}}, "{'a': 1}"),
        ({"id": "  pad  "}, "pad"),
        ({"id": "   "}, ""),
        ({"id": "", "session_id": "S2"}, "S2"),
        ({"id": "ID1", "session_id": "ID2"}, "ID1"),
        ({"id": 0, "session_id": ""}, None),
        ({"session_id": " viaSid "}, "viaSid"),
        ({"id": "\u00a0x\u3000"}, "x"),  # str.strip() trims Unicode whitespace
    ],
)
def test_requested_id(body: dict, chosen: str | None) -> None:
    assert requested_id(body) == chosen


@pytest.mark.parametrize(
    "session_id",
    ["a..b", "..", "...", "a/b", "x/", "/x", "a\\b", "C:", "C:x", "a:b", "\u00e9:x", "\u01c5:x", "\u0416:x"],
)
def test_path_unsafe(session_id: str) -> None:
    assert is_path_unsafe(session_id)
    assert create_id_error(session_id) == INVALID


@pytest.mark.parametrize("session_id", ["ab:x", ":x", "1:x", "_:x", "a.b", ".", "x", "C"])
def test_path_safe_ids(session_id: str) -> None:
    assert not is_path_unsafe(session_id)
    assert create_id_error(session_id) is None


@pytest.mark.parametrize(
    "session_id",
    ["t\tb", "\x01x", "x\x7f", "x\x85y", "x\x9fy", "x\x1fy", "a\x0bb", "t\nb", "t\rb", "t\x00b"],
)
def test_create_refuses_every_control_character(session_id: str) -> None:
    """D3: Unicode category Cc (C0, DEL, C1) is refused on create, not only CR/LF/NUL."""
    assert has_control_character(session_id)
    assert create_id_error(session_id) == INVALID


@pytest.mark.parametrize("session_id", ["zw\u200bsp", "rtl\u202eo", "\ufeffbom", "ls\u2028x", "caf\u00e9", "\U0001f600"])
def test_format_and_other_characters_are_accepted(session_id: str) -> None:
    assert not has_control_character(session_id)
    assert create_id_error(session_id) is None


def test_length_limit_counts_code_points_after_the_other_checks() -> None:
    assert create_id_error("y" * 256) is None
    assert create_id_error("\U0001f600" * 256) is None
    assert create_id_error("x" * 257) == TOO_LONG
    assert create_id_error(".." + "x" * 257) == INVALID
    assert create_id_error("\t" + "x" * 300) == INVALID


def test_empty_and_surrogates() -> None:
    assert create_id_error("") == INVALID
    assert create_id_error("x\ud800y") == INVALID  # D6: refused before any write
    assert fork_id_error("x\udfff") == INVALID


@pytest.mark.parametrize("session_id", ["../evil", "a/b", "C:x", "x" * 300, "t\tb", "x\x7f"])
def test_fork_keeps_the_lax_checks(session_id: str) -> None:
    assert fork_id_error(session_id) is None


@pytest.mark.parametrize("session_id", ["", "a\nb", "a\rb", "a\x00b"])
def test_fork_refuses(session_id: str) -> None:
    assert fork_id_error(session_id) == INVALID
