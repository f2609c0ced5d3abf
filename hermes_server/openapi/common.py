"""The OpenAPI components every Hermes route family shares: the error envelope and its answers,
the bearer scheme, and the parameters more than one family takes.

A family's own components are in its schemas module (`openapi/<family>_schemas.py`); the
document emits only what the served operations name (openapi/document.py).
"""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, error_answer, json_object, nullable, record

# Error answers shared by many operations, to merge into `Operation.responses`.
AUTH_ERRORS = {401: "Unauthorized"}
STORE_ERRORS = {401: "Unauthorized", 503: "Unavailable"}
SESSION_ERRORS = {**STORE_ERRORS, 404: "NotFound"}
BODY_ERRORS = {400: "BadRequest", 413: "PayloadTooLarge"}

# The header a chat answer names its effective session in.
SESSION_ID_HEADER = {"X-Hermes-Session-Id": {
    "description": "The session the turn ended on (differs from the path id when compression rotated it).",
    "schema": {"type": "string"},
}}

COMPONENTS: Components = {
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
    "schemas": {
        "Error": record({
            "error": json_object({
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": nullable("string"),
                "code": nullable("string"),
            }, ["message", "type"]),
        }),
        # The jobs and cron envelope: one string.
        "BareError": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]},
    },
    "responses": {
        "BadRequest": error_answer("Invalid JSON, a body that is not an object, or an invalid field."),
        "Unauthorized": error_answer("Missing or wrong bearer key (envelope without `param`)."),
        "Forbidden": error_answer("X-Hermes-Session-Key sent to a server without an API key."),
        "NotFound": {
            "description": "No session has this exact id (`session_not_found`); or, as text/plain "
                           "`404: Not Found`, an id segment no route matches (one with `{` or `}`).",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}},
                        "text/plain": {"schema": {"const": "404: Not Found"}}},
        },
        "Conflict": error_answer("A session with this id already exists (`session_exists`)."),
        "PayloadTooLarge": error_answer("Body over 10,000,000 bytes (`body_too_large`)."),
        "ServerError": error_answer("The agent failed during the turn (`server_error`)."),
        "Unavailable": error_answer("state.db cannot be opened, or its storage fails under it: a full disk, a "
                                    "read-only file, an I/O error (`session_db_unavailable`; the message names the "
                                    "cause)."),
        "TooManyRuns": {**error_answer("As many agent turns are live as the server allows (`rate_limit_exceeded`)."),
                        "headers": {"Retry-After": {"schema": {"type": "string"}}}},
        # 0.20+: a model lock, or a chat turn requiring one, names a model this server does not route to.
        "ModelLockUnavailable": error_answer("The requested model is not one this server routes to "
                                             "(`model_lock_unavailable`); nothing was stored."),
    },
    "parameters": {
        "session_id": {
            "name": "session_id", "in": "path", "required": True,
            "description": "One path segment, percent-decoded (`a%2Fb` addresses the id `a/b`). "
                           "A segment with `{` or `}` matches no route (404 text/plain), as upstream.",
            "schema": {"type": "string", "minLength": 1, "pattern": "^[^{}]+$"},
        },
        "X-Hermes-Session-Key": {"name": "X-Hermes-Session-Key", "in": "header",
                                 "description": "Long-term memory scope of the turn (at most 256 characters).",
                                 "schema": {"type": "string", "maxLength": 256}},
        "Idempotency-Key": {"name": "Idempotency-Key", "in": "header",
                            "description": "A non-streaming retry with the same key and request gets the first "
                                           "answer's turn again (for 300 s) instead of a new turn.",
                            "schema": {"type": "string"}},
    },
}

# Any JSON value: fields upstream accepts with any type and stringifies.
ANY: dict[str, Any] = {}
COUNTER = {"type": "integer", "minimum": 0}
# Token counts as runs and responses report them.
TOKEN_USAGE = {"type": "object", "properties": {k: {"type": "integer"} for k in
                                                ("input_tokens", "output_tokens", "total_tokens")}}
# The `input` of a run or a response.
OPEN_INPUT = {"description": "A string, or a list of messages (the last one is the user message)."}
