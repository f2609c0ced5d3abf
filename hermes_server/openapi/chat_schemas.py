"""OpenAPI components of session chat (routes/chat.py): the request, the answer, and the stream's events."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, json_answer, json_object, nullable, record, schema_ref, with_example
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
    "ChatCompletion": {**json_answer("The assistant's reply for one turn.", "ChatCompletion"),
                       "headers": SESSION_ID_HEADER},
    "ChatStream": {
        "description": "Server-sent events: run.started, message.started, deltas, completion, done.",
        "headers": SESSION_ID_HEADER,
        "content": {"text/event-stream": {"schema": schema_ref("StreamEvent")}},
    },
}

COMPONENTS: Components = {"schemas": SCHEMAS, "responses": RESPONSES}
