"""The `_thinking` text of a model call: its content, tags removed, trimmed, 500 characters."""

from __future__ import annotations

import pytest

from hermes_server.domain.thinking import thinking_text


@pytest.mark.parametrize("content, expected", [
    ("MOCK-REPLY to: hi [n=1]", "MOCK-REPLY to: hi [n=1]"),
    ("  padded \n", "padded"),
    ("<think>private musing</think>\nanswer", "private musing\nanswer"),  # inner text kept
    ("<reasoning>a</reasoning> <REASONING_SCRATCHPAD>b</REASONING_SCRATCHPAD>", "a b"),
    ("<thinking>kept</thinking>", "<thinking>kept</thinking>"),  # only the three tags
    ("<THINK>case</THINK>", "<THINK>case</THINK>"),  # case-sensitive
    ("<think></think>", None),
    ("   ", None),
    ("", None),
    (None, None),
])
def test_thinking_text(content: str | None, expected: str | None) -> None:
    assert thinking_text(content) == expected


def test_cut_at_500_code_points_without_a_second_trim() -> None:
    text = "é" * 499 + " " + "x" * 10
    assert thinking_text(text) == "é" * 499 + " "
