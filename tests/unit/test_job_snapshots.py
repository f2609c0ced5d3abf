"""The provider/model a new cron job snapshots from the `model` section of `config.yaml` (0.19.0's rule)."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_server.domain.job_snapshots import expanded, snapshots
from hermes_server.domain.run_input import stored_user_message

ENV = {"M": "env-model", "P": "Custom"}


@pytest.mark.parametrize(("section", "expected"), [
    (None, (None, None)),
    ("  plain  ", (None, "plain")),
    ("", (None, None)),
    ({"provider": "custom", "default": "mock-model"}, ("custom", "mock-model")),
    ({"provider": " OpenRouter ", "default": "x/y"}, ("openrouter", "x/y")),
    ({"provider": "auto", "default": "m"}, (None, "m")),
    ({"default": None, "model": "fallback"}, (None, "fallback")),
    ({"default": 5}, (None, None)),
    ({"provider": "${P}", "default": "${M}"}, ("custom", "env-model")),
    ({"default": "${NOPE}"}, (None, "${NOPE}")),
    (["a"], (None, None)),
])
def test_snapshots(section: Any, expected: tuple[Any, Any]) -> None:
    assert snapshots(section, ENV) == expected


def test_expansion_reaches_nested_values_and_leaves_keys() -> None:
    assert expanded({"${M}": ["${M}", 1, {"k": "${P}"}]}, ENV) == {"${M}": ["env-model", 1, {"k": "Custom"}]}


def test_a_run_keeps_only_text_typed_parts_and_image_placeholders() -> None:
    parts = [{"type": "input_text", "text": "a"}, "bare", {"type": "text", "text": 5},
             {"type": "input_image", "image_url": "x"}, {"type": "text"}]
    assert stored_user_message(parts) == [{"type": "text", "text": "5"}, {"type": "image_url"},
                                          {"type": "text", "text": ""}]
    assert stored_user_message("text") == "text"
