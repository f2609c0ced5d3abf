"""OpenAPI components of session chat (routes/chat.py): the request, the answer, and the stream's events."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, json_answer, json_object, nullable, record, schema_ref, with_example
from hermes_server.openapi.common import ANY, COUNTER, SESSION_ID_HEADER

# The events of POST /api/sessions/{session_id}/chat/stream (README, "Chat turns").
STREAM_EVENTS = (
    "run.started", "message.started", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
    "tool.progress", "assistant.completed", "run.completed", "error", "done",
)

SCHEMAS: dict[str, Any] = {
    "ChatRequest": with_example({"message": "Hello"}, json_object({
        "message": {**ANY, "description": "A string, or a list of text/image content parts."},
        "input": {**ANY, "description": "Read when `message` is not truthy."},
        "system_message": ANY,
        "instructions": ANY,
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
