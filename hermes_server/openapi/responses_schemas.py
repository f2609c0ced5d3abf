"""OpenAPI components of the Responses API (routes/responses.py)."""

from __future__ import annotations

from hermes_server.openapi.build import Components, json_answer, schema_ref, with_example
from hermes_server.openapi.common import ANY, INPUT_MESSAGE, TOKEN_USAGE, flag, text, text_or_null

_SESSION_ID = {"X-Hermes-Session-Id": {"description": "The session the response's turn is stored in.",
                                       "schema": {"type": "string"}}}

# What creating a response does beyond its fields and answers.
CREATE_RESPONSE = """\
One agent turn, in OpenAI's Responses API shape, plain or streamed (`response.*` events). It runs on a \
new session unless it continues a stored response (`previous_response_id`, or the latest of a named \
`conversation`), whose session it appends to; the model sees that stored chain's history (or \
`conversation_history`), never state.db's. The response is stored for chaining unless `store` is false; \
`X-Hermes-Session-Id` names the session of the turn."""

COMPONENTS: Components = {
    "schemas": {
        "ResponseRequest": with_example({"input": "Hello", "conversation": "demo"}, {
            "type": "object",
            "required": ["input"],
            "properties": {
                "input": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"anyOf": [
                    {"type": "string"}, INPUT_MESSAGE]}}], "description": (
                    "The user's message as text, or a list of messages (a string item is a user message; an object's "
                    "`role` defaults to `user`): the earlier ones join the history the model sees, the last one is "
                    "the turn and must have visible content (else 400 `No user message found in input`). Absent: "
                    "400 `Missing 'input' field`; neither text nor a list: 400.")},
                "instructions": text_or_null("The system instruction of this turn (kept with the stored response "
                                             "and inherited by a chained one that gives none); text, else 400."),
                "previous_response_id": text("Continue a stored response: its history, instructions and session "
                                             "(unknown: 404 `Previous response not found`). Not with `conversation`."),
                "conversation": text("A conversation's name: continue its latest stored response, and become its "
                                     "latest (a new name starts one). Not with `previous_response_id` (400). A number "
                                     "is taken as its text; an object or a list is 400."),
                "conversation_history": {"type": "array", "items": INPUT_MESSAGE, "description": (
                    "The history the model sees, given explicitly (then no stored response is read). Each item "
                    "needs `role` and `content`, else 400.")},
                "store": flag("false: the response is not kept (it cannot be fetched or continued). Default true."),
                "stream": flag("true: the answer streams as `response.*` events."),
                "model": text("Echoed in the response; the served model name when absent. As upstream, any JSON value "
                              "is echoed as sent."),
                "truncation": {"type": "string", "enum": ["auto", "disabled"], "description": (
                    "`auto`: the model sees at most the last 100 history messages; anything else keeps them all.")},
            },
        }),
        "Response": {
            "type": "object",
            "required": ["id", "object", "status", "created_at", "model", "output"],
            "properties": {
                "id": {"type": "string", "pattern": "^resp_[0-9a-f]{28}$"}, "object": {"const": "response"},
                "status": {"enum": ["in_progress", "completed", "failed", "incomplete"]},
                "created_at": {"type": "integer"}, "model": ANY,
                "output": {"type": "array", "items": {"type": "object"}}, "usage": TOKEN_USAGE,
                "error": {"type": "object"},
            },
        },
        "ResponseDeleted": {"type": "object", "required": ["id", "object", "deleted"], "additionalProperties": False,
                            "properties": {"id": {"type": "string"}, "object": {"const": "response"},
                                           "deleted": {"const": True}}},
    },
    "responses": {
        "ResponseObject": {
            **json_answer("The response (plain), or with `stream` its `response.*` events.", "Response", _SESSION_ID),
            "content": {"application/json": {"schema": schema_ref("Response")},
                        "text/event-stream": {"schema": {"type": "object", "description": "`event: response.*` "
                                                         "frames, each payload ending with its `sequence_number`."}}},
        },
        "StoredResponse": json_answer("The stored response object, exactly as it was answered.", "Response"),
        "ResponseDeleted": json_answer("The response is no longer stored.", "ResponseDeleted"),
    },
    "parameters": {
        "response_id": {"name": "response_id", "in": "path", "required": True,
                        "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
    },
}
