"""OpenAPI components of OpenAI-compatible chat (routes/completions.py)."""

from __future__ import annotations

from hermes_server.openapi.build import Components, json_object, record, schema_ref, with_example
from hermes_server.openapi.common import ANY, COUNTER, INPUT_MESSAGE, SESSION_ID_HEADER, flag, text

# What a chat completion does beyond its fields and answers.
COMPLETIONS = """\
One agent turn for OpenAI-style clients (the `openai` package, Open WebUI …), stored as a session like \
the session routes' turns. With `X-Hermes-Session-Id` (which needs a server key), the turn continues (or \
creates) that session and the model sees its stored history, not the body's earlier messages. Without it, \
the turn goes to a session named after the system text and first user message (`api-<16 hex>`), and the \
model sees the body's earlier messages, which are not stored. A non-streamed answer's \
`X-Hermes-Session-Id` names the session the turn ended in (after a compression rotation, the \
continuation); a streamed one's is sent first and names the requested id."""

COMPONENTS: Components = {
    "schemas": {
        "OpenAIChatRequest": with_example({"model": "hermes-agent", "messages": [{"role": "user", "content": "Hello"}]},
                                          json_object({
            "messages": {"type": "array", "minItems": 1, "items": INPUT_MESSAGE,
                         "description": "The conversation. `system` messages (their text joined) are the "
                                        "instruction; `user` and `assistant` messages the turns, the last of which "
                                        "must have visible content and is the one answered; other roles are "
                                        "ignored. Missing or empty: 400 `Missing or invalid 'messages' field`."},
            "model": text("Echoed in the answer; the served model name when absent. As upstream, any JSON value is "
                          "echoed as sent."),
            "stream": flag("true: the answer streams as `chat.completion.chunk` events."),
        }, ["messages"], closed=False)),
        "OpenAIChatCompletion": record({
            "id": {"type": "string"},
            "object": {"const": "chat.completion"},
            "created": {"type": "integer"},
            "model": ANY,
            "choices": {"type": "array", "items": record({
                "index": {"type": "integer"},
                "message": record({"role": {"const": "assistant"}, "content": {"type": "string"}}),
                "finish_reason": {"type": "string"},
            })},
            "usage": record({"prompt_tokens": COUNTER, "completion_tokens": COUNTER, "total_tokens": COUNTER}),
        }),
    },
    "responses": {
        "OpenAIChatCompletion": {
            "description": "The turn as a `chat.completion`, or with `stream` as `data:` chunks "
                           "(`chat.completion.chunk`, the last one with `usage`), then `data: [DONE]`.",
            "headers": SESSION_ID_HEADER,
            "content": {"application/json": {"schema": schema_ref("OpenAIChatCompletion")},
                        "text/event-stream": {"schema": json_object({
                            "data": {"type": "string", "description": "A `chat.completion.chunk` as JSON, or `[DONE]`."},
                        }, ["data"], closed=False)}},
        },
    },
    "parameters": {
        "X-Hermes-Session-Id": {"name": "X-Hermes-Session-Id", "in": "header",
                                "description": "Continue (or create) this session: the model sees its stored history "
                                               "and the turn is stored there. Needs a server key.",
                                "schema": {"type": "string", "maxLength": 256}},
    },
}
