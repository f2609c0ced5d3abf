"""The body of `POST /v1/runs`: the user message, the history the model sees, the run's fields.

Upstream's rules, in its order: `input` must be truthy; its user message is `input`
itself (a string) or the last item's `content` (a list); `conversation_history` wins
over `previous_response_id`, and a list `input` of several items gives the history
when neither does. What upstream answers with a bare 500 (an `input` list ending in a
non-object) is a 400 naming the field here (docs/differences.md, D6). A user message
that is a list of parts reaches 0.19.0's agent as sent, so its stored row keeps only
what that agent keeps of it (`stored_user_message`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_server.domain.content import UserMessage, normalize_content
from hermes_server.domain.openai_messages import MessagesError
from hermes_server.domain.titles import scrub_surrogates

# The answers `POST /v1/runs/{run_id}/approval` takes, and the words read as `once`.
APPROVAL_CHOICES = ("once", "session", "always", "deny")
CHOICE_ALIASES = {"approve": "once", "approved": "once", "allow": "once"}
# The part types 0.19.0's agent stores as the image placeholder when it writes a list-of-parts row.
_IMAGE_PARTS = ("image", "image_url", "input_image")


@dataclass(frozen=True)
class RunInput:
    """A validated run request, before the response store is consulted."""

    user_message: Any  # a string, a list of parts or any JSON value the agent is given as is
    history: list[dict[str, str]]  # the explicit `conversation_history` (empty: none)
    earlier: list[dict[str, Any]]  # the history earlier `input` items give when nothing else does
    instructions: Any
    previous_response_id: Any
    session_id: Any
    model: Any


def _as_text(content: Any, param: str) -> str:
    return str(content)


def history_entries(raw: Any, content: Callable[[Any, str], Any] = _as_text) -> list[dict[str, Any]]:
    """`conversation_history` as role/content entries, or the 400. Runs keep upstream's `str()` of
    each content; the Responses API passes its own `content` rule (which also gets the field's name)."""
    if not isinstance(raw, list):
        raise MessagesError("'conversation_history' must be an array of message objects")
    entries = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "role" not in entry or "content" not in entry:
            raise MessagesError(f"conversation_history[{i}] must have 'role' and 'content' fields")
        entries.append({"role": str(entry["role"]),
                        "content": content(entry["content"], f"conversation_history[{i}].content")})
    return entries


def _flattened(content: Any) -> str:
    """An earlier input item's content: the text of its `text` parts joined by spaces."""
    if isinstance(content, list):
        content = " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return str(content)


def stored_user_message(content: Any) -> UserMessage:
    """A run's user message as its state.db row keeps it (the model is given all of it).

    0.19.0 hands the run's `content` to its agent unchanged, and the agent stores of a list
    only the parts typed exactly `text` (their `text`, even empty) and an image placeholder
    per image part, one per line, or NULL when none is left: `input_text` parts and bare
    strings are not stored. The parts returned make `content.stored_user_content` write that.
    """
    if not isinstance(content, list):
        return normalize_content(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append({"type": "text", "text": scrub_surrogates(str(part.get("text", "")))})
        elif isinstance(part, dict) and part.get("type") in _IMAGE_PARTS:
            parts.append({"type": "image_url"})
    return parts


def parse_run_input(body: dict[str, Any], served_model: str) -> RunInput:
    """Validate a run body; MessagesError carries upstream's 400 (or D6's for the bare 500s)."""
    raw_input = body.get("input")
    if not raw_input:
        raise MessagesError("Missing 'input' field")
    if isinstance(raw_input, str):
        user_message: Any = raw_input
    elif isinstance(raw_input, list):
        last = raw_input[-1]
        if not isinstance(last, dict):
            raise MessagesError("The last item of 'input' must be a message object", param="input",
                                upstream_crashes=True)
        user_message = last.get("content", "")
    else:
        user_message = ""
    if not user_message:
        raise MessagesError("No user message found in input")
    history: list[dict[str, str]] = []
    raw_history = body.get("conversation_history")
    if raw_history:
        history = history_entries(raw_history)
    earlier = [
        {"role": item["role"], "content": _flattened(item["content"])}
        for item in (raw_input[:-1] if isinstance(raw_input, list) else [])
        if isinstance(item, dict) and item.get("role") and item.get("content")
    ]
    return RunInput(
        user_message, history, earlier, body.get("instructions"), body.get("previous_response_id"),
        body.get("session_id"), body.get("model", served_model),
    )
