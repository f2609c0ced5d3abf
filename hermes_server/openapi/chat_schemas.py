"""OpenAPI components of session chat (routes/chat.py): the request, the answer, the stream's events, and
what the two operations do beyond their fields (their descriptions)."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import (
    Components,
    error_answer,
    json_answer,
    json_object,
    nullable,
    record,
    schema_ref,
    with_example,
)
from hermes_server.openapi.common import COUNTER, SESSION_ID_HEADER, content, text_or_null

# The events of POST /api/sessions/{session_id}/chat/stream (README, "Chat turns").
STREAM_EVENTS = (
    "run.started", "message.started", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
    "tool.progress", "assistant.completed", "run.completed", "error", "done",
)

SCHEMAS: dict[str, Any] = {
    "ChatRequest": with_example({"message": "Hello"}, json_object({
        "message": content("The user's message. Not blank, else 400 `missing_message`; a malformed part is 400 "
                           "`unsupported_content_type`, `invalid_image_url` or `invalid_content_part` (`param` "
                           "`message`)."),
        "input": content("Read as `message` when `message` is absent or empty (a blank `message` is not empty)."),
        "system_message": text_or_null("An instruction added to the system prompt for this turn only (never "
                                       "stored). When it is empty (or any falsy JSON value), `instructions` is read; "
                                       "what is read must be text or null, else 400 `invalid_system_message`."),
        "instructions": text_or_null("Read as `system_message` when that is empty."),
    }, closed=False)),
    "ChatCompletion": record({
        "object": {"const": "hermes.session.chat.completion"},
        "session_id": {"type": "string"},
        "message": record({"role": {"const": "assistant"}, "content": nullable("string")}),
        "usage": schema_ref("Usage"),
    }),
    "StreamEvent": json_object({
        "event": {"enum": list(STREAM_EVENTS)},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object", "required": ["session_id", "run_id", "seq", "ts"],
                              "properties": {"seq": {"type": "integer"}, "ts": {"type": "number"}}},
        },
    }, ["event", "data"], closed=False),
    "Usage": record({"input_tokens": COUNTER, "output_tokens": COUNTER, "total_tokens": COUNTER}),
}

RESPONSES: dict[str, Any] = {
    "ChatBadRequest": error_answer(
        "Before the turn, nothing stored: an `X-Hermes-Session-Key` over 256 characters (`Session key too long`, "
        "no `code`); invalid JSON or a body that is not an object; no visible user message (`missing_message`: "
        "`message` and `input` absent, blank, or a list without a text or image part); a content part refused "
        "(`param` `message`: `unsupported_content_type` for file parts, other types or non-image data URLs, "
        "`invalid_image_url`, `invalid_content_part`); or an instruction that is not text "
        "(`invalid_system_message`)."),
    "ChatCompletion": {**json_answer("The assistant's reply for one turn.", "ChatCompletion"),
                       "headers": SESSION_ID_HEADER},
    "ChatStream": {
        "description": "Server-sent events: run.started, message.started, deltas, completion, done.",
        "headers": SESSION_ID_HEADER,
        "content": {"text/event-stream": {"schema": schema_ref("StreamEvent")}},
    },
}

COMPONENTS: Components = {"schemas": SCHEMAS, "responses": RESPONSES}

# What each chat operation does beyond its fields and answers, and the hazards a connector must handle.
_TURN = """\
Runs one agent turn on the session with exactly this id, on its stored history, checked in this order: \
`X-Hermes-Session-Key` (403, 400), the session (503, 404), the body (400). A closed session can chat and \
stays closed. The turn runs to its end even when the client goes away, and its messages are stored."""

SESSION_CHAT = _TURN + """

**The id may rotate.** When context compression runs in the turn (real Hermes past its context budget; \
here with `--compress-after-messages N`), the session is closed `compression` and the turn ends in a new \
continuation session: the answer's `session_id` and its `X-Hermes-Session-Id` header name it. Send later \
turns, PATCHes and forks there; the list and /messages of the old id already follow the chain to it."""

SESSION_CHAT_STREAM = _TURN + """ Errors before the turn starts are JSON answers, not events.

Events: `run.started`, `message.started`, `assistant.delta` (text), `tool.started`/`tool.completed`, \
`tool.progress` (reasoning), then `assistant.completed` and `run.completed`, or `error`; always `done` \
last. Each carries `session_id`, `run_id`, `seq` (1, 2, …) and `ts`. A `: keepalive` comment is sent after \
30 seconds without an event (`--keepalive-seconds`).

**The id may rotate.** The `X-Hermes-Session-Id` header is sent before the turn runs, so it names the path \
id. After a compression rotation (see the non-streamed chat), `session_id` of `assistant.completed` and \
`run.completed` names the session the turn ended in: send later turns there."""
