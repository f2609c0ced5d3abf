"""The OpenAPI components every Hermes route family shares: the error envelope and its answers,
the bearer scheme, the parameters more than one family takes, and what a user message and a
conversation's message may be; and the helpers request fields are typed with.

A family's own components are in its schemas module (`openapi/<family>_schemas.py`); the
document emits only what the served operations name (openapi/document.py).
"""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, error_answer, json_object, nullable, record, schema_ref

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

# Any JSON value, in answers that carry what was stored or sent as it was (a message's content, a
# response's model). Request fields are never this: each says what a client should send (below).
ANY: dict[str, Any] = {}
COUNTER = {"type": "integer", "minimum": 0}
# Token counts as runs and responses report them.
TOKEN_USAGE = {"type": "object", "properties": {k: {"type": "integer"} for k in
                                                ("input_tokens", "output_tokens", "total_tokens")}}

# Request fields. Each is typed as what a client should send; where the server, as upstream, takes
# more (any JSON value stringified, a word for a boolean), its description says so.
STRINGIFIED = " As upstream, any other JSON value is taken as its Python `str()` (`5` is `\"5\"`)."
LENIENT_FLAG = " As upstream, `1`/`0` and the words `true`, `yes`, `on` (`false`, `no`, `off`) count too."


def text(description: str, **rules: Any) -> dict[str, Any]:
    """A string field of a request (with JSON Schema `rules` such as `maxLength`)."""
    return {"type": "string", **rules, "description": description}


def text_or_null(description: str, **rules: Any) -> dict[str, Any]:
    """A string field of a request that may also be null."""
    return {"type": ["string", "null"], **rules, "description": description}


def flag(description: str) -> dict[str, Any]:
    """A boolean field of a request, read as upstream reads booleans (LENIENT_FLAG)."""
    return {"type": "boolean", "description": description + LENIENT_FLAG}


def content(description: str) -> dict[str, Any]:
    """A user message: text, or a list of text and image parts (the `Content` schema)."""
    return {"$ref": "#/components/schemas/Content", "description": description}


# A message of a conversation a request carries (chat completions, responses and runs).
INPUT_MESSAGE = schema_ref("InputMessage")


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
        # What a user message may be (domain/content.py's rules, shared by every route that takes one).
        "Content": {
            "description": "Text, or a list of content parts: text parts, and image parts by http(s) or "
                           "`data:image/…` URL (at most 1,000 parts are read; any text is cut at 65,536 "
                           "characters). Text must not be blank. Bare strings in a list are read as text parts, "
                           "but a list of bare strings alone is refused (`missing_message`), as upstream; "
                           "file parts are refused (`unsupported_content_type`).",
            "anyOf": [{"type": "string"},
                      {"type": "array", "items": {"anyOf": [schema_ref("TextPart"), schema_ref("ImagePart")]}}],
        },
        "InputMessage": json_object({
            "role": text("`user`, `assistant` or `system` (what each route does with other roles is in its field's "
                         "description)."),
            "content": content("The message's text or parts."),
        }, ["role", "content"], closed=False),
        "TextPart": json_object({
            "type": {"enum": ["text", "input_text", "output_text"], "description": "Any case, surrounding spaces "
                                                                                  "ignored."},
            "text": text("The text (a part whose text is empty is skipped)." + STRINGIFIED),
        }, ["type", "text"], closed=False),
        "ImagePart": json_object({
            "type": {"enum": ["image_url", "input_image"]},
            "image_url": {
                "anyOf": [{"type": "string"}, json_object({
                    "url": {"type": "string"},
                    "detail": {"type": "string", "description": "Overrides the part's `detail`."},
                }, ["url"], closed=False)],
                "description": "An http(s) URL or a `data:image/…;base64,…` URL, or an object with `url` (and "
                               "`detail`). Another scheme is `invalid_image_url`; a data URL of another type "
                               "`unsupported_content_type`.",
            },
            "detail": {"type": "string", "minLength": 1, "description": "Non-blank when given "
                                                                       "(`invalid_content_part`)."},
        }, ["type", "image_url"], closed=False),
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
                                 "description": "The long-term memory scope of the turn, echoed in the answer's "
                                                "headers; blank counts as absent. Sent to a server without an API "
                                                "key: 403.",
                                 "schema": {"type": "string", "maxLength": 256}},
        "Idempotency-Key": {"name": "Idempotency-Key", "in": "header",
                            "description": "A non-streaming retry with the same key and request gets the first "
                                           "answer's turn again (for 300 s) instead of a new turn.",
                            "schema": {"type": "string"}},
    },
}
