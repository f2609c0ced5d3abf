"""The Responses API's rules: the request body and the output items.

Pure functions in upstream's order of checks. A request's `input` becomes messages
(a string is one user message; a list item is a user string or a `{role, content}`
object, content normalized as chat content is); all but the last message join the
history; the last one's content is the user message. Where upstream answers with a
bare 500 (a body `conversation` that is an object, an array or text with a lone surrogate),
a 400 names the field here (docs/differences.md, D6). The history a turn sees and leaves
is `response_history.py`'s.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from hermes_server.domain.content import ContentError, has_visible_payload, normalize_content
from hermes_server.domain.openai_messages import MessagesError, request_bool
from hermes_server.domain.run_input import history_entries
from hermes_server.domain.titles import has_lone_surrogate

# Most history messages a request with `truncation: "auto"` keeps.
TRUNCATION_LIMIT = 100
_ARGUMENT_KEYS = ("content", "query", "pattern", "old_string", "new_string")


@dataclass(frozen=True)
class ResponseInput:
    """A validated Responses request, before the store is consulted."""

    messages: list[dict[str, Any]]  # every input message, in order; the last one is the turn's
    history: list[dict[str, Any]]  # the explicit `conversation_history` (empty: none)
    instructions: Any  # text, None or an empty value (anything else only with `lax_instructions`)
    previous_response_id: Any
    conversation: Any
    store: bool
    stream: bool
    model: Any
    truncate: bool


def _content(raw: Any, param: str) -> Any:
    try:
        return normalize_content(raw)
    except ContentError as exc:
        raise ContentError(exc.code, exc.message, param=param) from None


def _input_messages(raw_input: Any) -> list[dict[str, Any]]:
    if isinstance(raw_input, str):
        return [{"role": "user", "content": normalize_content(raw_input)}]
    if not isinstance(raw_input, list):
        raise MessagesError("'input' must be a string or array")
    messages = []
    for index, item in enumerate(raw_input):
        if isinstance(item, str):
            messages.append({"role": "user", "content": normalize_content(item)})
        elif isinstance(item, dict):
            messages.append({"role": item.get("role", "user"),
                             "content": _content(item.get("content", ""), f"input[{index}].content")})
    return messages


def parse_response_input(body: dict[str, Any], served_model: str, *, lax_instructions: bool = False) -> ResponseInput:
    """Validate a Responses body up to the store lookup; errors carry upstream's 400s.

    An instruction that is neither text nor empty is refused (D6) unless `lax_instructions`
    (`--upstream-quirks`), which lets it reach the turn, failing it as 0.19.0's agent fails.
    """
    raw_input = body.get("input")
    if raw_input is None:
        raise MessagesError("Missing 'input' field")
    previous, conversation = body.get("previous_response_id"), body.get("conversation")
    if conversation and previous:
        raise MessagesError("Cannot use both 'conversation' and 'previous_response_id'")
    if conversation and isinstance(conversation, (dict, list)):
        raise MessagesError("'conversation' must be a string", param="conversation", upstream_crashes=True)
    if conversation and not isinstance(conversation, str):
        # A number names the conversation by its text, as SQLite's TEXT column stores it upstream.
        conversation = str(int(conversation)) if isinstance(conversation, bool) else str(conversation)
    if isinstance(conversation, str) and has_lone_surrogate(conversation):  # 0.19.0 fails looking it up
        raise MessagesError("Invalid value for 'conversation': text must be valid Unicode", param="conversation",
                            upstream_crashes=True)
    messages = _input_messages(raw_input)
    raw_history = body.get("conversation_history")
    history = history_entries(raw_history, _content) if raw_history else []
    instructions = body.get("instructions")
    if instructions and not isinstance(instructions, str) and not lax_instructions:
        raise MessagesError("'instructions' must be a string", param="instructions")
    return ResponseInput(
        messages, history, instructions, previous, conversation,
        request_bool(body.get("store"), default=True), request_bool(body.get("stream")),
        body.get("model", served_model), body.get("truncation") == "auto",
    )


def user_turn(messages: list[dict[str, Any]], history: list[dict[str, Any]],
              truncate: bool) -> tuple[list[dict[str, Any]], Any]:
    """The history the model sees and the user message: earlier inputs join the history."""
    history = history + messages[:-1]
    user_message = messages[-1].get("content", "") if messages else ""
    if not has_visible_payload(user_message):
        raise MessagesError("No user message found in input")
    if truncate and len(history) > TRUNCATION_LIMIT:
        history = history[-TRUNCATION_LIMIT:]
    return history, user_message


def fingerprint(body: dict[str, Any]) -> str:
    """What must match for an `Idempotency-Key` replay of a Responses request."""
    subset = {key: body.get(key) for key in ("input", "instructions", "previous_response_id", "conversation",
                                             "model", "tools")}
    return hashlib.sha256(repr(subset).encode("utf-8", "surrogatepass")).hexdigest()


def message_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def output_items(messages: list[dict[str, Any]], final_text: str) -> list[dict[str, Any]]:
    """The plain answer's `output`: each tool call and tool result of the turn, then the message."""
    items: list[dict[str, Any]] = []
    for msg in messages:
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            for call in msg["tool_calls"]:
                function = call.get("function", {})
                items.append({"type": "function_call", "name": function.get("name", ""),
                              "arguments": function.get("arguments", ""), "call_id": call.get("id", "")})
        elif msg.get("role") == "tool":
            items.append({"type": "function_call_output", "call_id": msg.get("tool_call_id", ""),
                          "output": msg.get("content", "")})
    items.append(message_item(final_text))
    return items


def compact_item(item: dict[str, Any]) -> dict[str, Any]:
    """An item as `response.completed` repeats it: long arguments and tool outputs shortened."""
    if item["type"] == "function_call":
        try:
            args = json.loads(item["arguments"])
        except ValueError:
            return item
        if isinstance(args, dict):
            for key in _ARGUMENT_KEYS:
                if isinstance(args.get(key), str) and len(args[key]) > 500:
                    args[key] = f"[{len(args[key])} chars \u2014 truncated for response.completed]"
            return {**item, "arguments": json.dumps(args)}
    elif item["type"] == "function_call_output":
        text = item["output"][0]["text"]
        if len(text) > 1000:
            return {**item, "output": [{"type": "input_text", "text": f"{text[:500]}...[{len(text) - 500} more chars]"}]}
    return item
