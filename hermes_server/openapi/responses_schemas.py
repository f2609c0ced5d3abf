"""OpenAPI components of the Responses API (routes/responses.py)."""

from __future__ import annotations

from hermes_server.openapi.build import Components, json_answer, schema_ref
from hermes_server.openapi.common import ANY, OPEN_INPUT, TOKEN_USAGE

_SESSION_ID = {"X-Hermes-Session-Id": {"description": "The session the response's turn is stored in.",
                                       "schema": {"type": "string"}}}

COMPONENTS: Components = {
    "schemas": {
        "ResponseRequest": {
            "type": "object",
            "required": ["input"],
            "properties": {
                "input": OPEN_INPUT, "instructions": ANY, "previous_response_id": ANY, "conversation": ANY,
                "conversation_history": {"type": "array", "items": {"type": "object"}},
                "store": ANY, "stream": ANY, "model": ANY, "truncation": ANY,
            },
        },
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
