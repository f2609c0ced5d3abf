"""What an agent reports as "thinking" after each model call: its content, tags removed.

0.19.0 reports, after every model call that produced text, that call's assistant
content as the `_thinking` progress of the session chat stream (and as
`reasoning.available` of a run's events). Not the model's reasoning stream: the
content, with only the `<think>`, `<reasoning>` and `<REASONING_SCRATCHPAD>` tags taken
out (their inner text stays), trimmed, and cut to 500 characters. A call whose content
is empty after that reports nothing.
"""

from __future__ import annotations

import re

THINKING_LIMIT = 500
_TAGS = re.compile(r"</?(?:REASONING_SCRATCHPAD|think|reasoning)>")


def thinking_text(content: str | None) -> str | None:
    """The text reported for a model call whose content is `content`, or None for no report."""
    if not content:
        return None
    text = _TAGS.sub("", content.strip()).strip()
    return text[:THINKING_LIMIT] or None
