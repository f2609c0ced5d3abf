"""The schema fragments the OpenAPI document is made of: schemas, responses, parameters.

Data only. Each route's `Operation` names its responses and body by the names
defined here; `openapi/document.py` turns the served route table into the document.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hermes_server.openapi.jobs_schemas import JOBS_PARAMETERS, JOBS_RESPONSES, JOBS_SCHEMAS
from hermes_server.openapi.runs_schemas import RUN_PARAMETERS, RUN_RESPONSES, RUN_SCHEMAS

# The managed-cron fire webhook's own scheme: a bearer token the cron service mints, not the API key.
FIRE_TOKEN = "fireToken"
SECURITY_SCHEMES = {
    "bearer": {"type": "http", "scheme": "bearer"},
    FIRE_TOKEN: {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                 "description": "A token of the managed-cron service; with no verifier configured, none is valid."},
}


# Error answers shared by many operations, to merge into `Operation.responses`.
AUTH_ERRORS = {401: "Unauthorized"}
STORE_ERRORS = {401: "Unauthorized", 503: "Unavailable"}
SESSION_ERRORS = {**STORE_ERRORS, 404: "NotFound"}
BODY_ERRORS = {400: "BadRequest", 413: "PayloadTooLarge"}


# Query parameters of GET /_fixture/requests.
JOURNAL_FILTERS = ("journal_route", "journal_method", "journal_session_id", "journal_status", "journal_bodies")


def ref(kind: str, name: str) -> dict[str, str]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


def _example(example: Any, schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "examples": [example]}


def _object(properties: dict[str, Any], required: Iterable[str] = (), closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": list(required)}
    if closed:
        schema["additionalProperties"] = False
    return schema


def _record(properties: dict[str, Any]) -> dict[str, Any]:
    """A closed object whose every property is always present (most of the answers)."""
    return _object(properties, properties)


# The events of POST /api/sessions/{session_id}/chat/stream (README, "Chat turns").
STREAM_EVENTS = (
    "run.started", "message.started", "assistant.delta", "tool.started", "tool.completed", "tool.failed",
    "tool.progress", "assistant.completed", "run.completed", "error", "done",
)

# Any JSON value: fields upstream accepts with any type and stringifies.
_ANY: dict[str, Any] = {}
_COUNTER = {"type": "integer", "minimum": 0}
_STATUS = {"type": "string", "enum": ["ok", "degraded"]}

_SESSION_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string"},
    "source": _nullable("string"),
    "user_id": _nullable("string"),
    "model": _nullable("string"),
    "title": _nullable("string"),
    "started_at": {"type": "number"},
    "ended_at": _nullable("number"),
    "end_reason": _nullable("string"),
    "message_count": _nullable("integer"),
    "tool_call_count": _nullable("integer"),
    "input_tokens": _nullable("integer"),
    "output_tokens": _nullable("integer"),
    "cache_read_tokens": _nullable("integer"),
    "cache_write_tokens": _nullable("integer"),
    "reasoning_tokens": _nullable("integer"),
    "estimated_cost_usd": _nullable("number"),
    "actual_cost_usd": _nullable("number"),
    "api_call_count": _nullable("integer"),
    "parent_session_id": _nullable("string"),
    "last_active": _nullable("number"),
    "preview": _nullable("string"),
    "_lineage_root_id": _nullable("string"),
    "has_system_prompt": {"type": "boolean"},
    "has_model_config": {"type": "boolean"},
}
# Keys every projection of a whole row carries (list rows add last_active and preview).
_SESSION_REQUIRED = [key for key in _SESSION_PROPERTIES if key not in {"last_active", "preview", "_lineage_root_id"}]

_CHECK = {
    "type": "object",
    "properties": {"status": _STATUS, "detail": {"type": "string"}},
    "required": ["status"],
}

SCHEMAS: dict[str, Any] = {
    "Error": _record({
        "error": _object({
            "message": {"type": "string"},
            "type": {"type": "string"},
            "param": _nullable("string"),
            "code": _nullable("string"),
        }, ["message", "type"]),
    }),
    "Session": _object(_SESSION_PROPERTIES, _SESSION_REQUIRED),
    "SessionListItem": _object(_SESSION_PROPERTIES, [*_SESSION_REQUIRED, "last_active", "preview"]),
    "SessionEnvelope": _record({
        "object": {"const": "hermes.session"},
        "session": ref("schemas", "Session"),
    }),
    "SessionList": _record({
        "object": {"const": "list"},
        "data": {"type": "array", "items": ref("schemas", "SessionListItem")},
        "limit": _COUNTER,
        "offset": _COUNTER,
        "has_more": {"type": "boolean"},
    }),
    "SessionDeleted": _record({
        "object": {"const": "hermes.session.deleted"},
        "id": {"type": "string"},
        "deleted": {"type": "boolean"},
    }),
    "Message": _record({
        "id": {"type": "integer"},
        "session_id": {"type": "string"},
        "role": {"type": "string"},
        "content": _ANY,
        "tool_call_id": _nullable("string"),
        "tool_calls": _ANY,
        "tool_name": _nullable("string"),
        "timestamp": {"type": "number"},
        "token_count": _nullable("integer"),
        "finish_reason": _nullable("string"),
        "reasoning": _nullable("string"),
        "reasoning_content": _nullable("string"),
    }),
    "MessageList": _record({
        "object": {"const": "list"},
        "session_id": {"type": "string"},
        "data": {"type": "array", "items": ref("schemas", "Message")},
    }),
    "CreateSession": _example({"id": "demo", "title": "Demo"}, _object({
        "id": {**_ANY, "description": "Used when truthy, as str(), trimmed; else session_id; else generated."},
        "session_id": _ANY,
        "title": {**_ANY, "description": "Any JSON value; stringified, then sanitised."},
        "model": _ANY,
        "system_prompt": _nullable("string"),
    }, closed=False)),
    "PatchSession": _example({"title": "Renamed"}, _object({"title": _ANY, "end_reason": _ANY})),
    "ForkSession": _example({"title": "A branch"},
                            _object({"id": _ANY, "session_id": _ANY, "title": _ANY}, closed=False)),
    "ChatRequest": _example({"message": "Hello"}, _object({
        "message": {**_ANY, "description": "A string, or a list of text/image content parts."},
        "input": {**_ANY, "description": "Read when `message` is not truthy."},
        "system_message": _ANY,
        "instructions": _ANY,
    }, closed=False)),
    "ChatCompletion": _record({
        "object": {"const": "hermes.session.chat.completion"},
        "session_id": {"type": "string"},
        "message": _record({"role": {"const": "assistant"}, "content": _nullable("string")}),
        "usage": ref("schemas", "Usage"),
    }),
    "StreamEvent": _object({
        "event": {"enum": list(STREAM_EVENTS)},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"type": "object", "required": ["session_id", "run_id", "seq", "ts"],
                              "properties": {"seq": {"type": "integer"}, "ts": {"type": "number"}}},
        },
    }, ["event", "data"], closed=False),
    "OpenAIChatRequest": _example({"model": "hermes-agent", "messages": [{"role": "user", "content": "Hello"}]},
                                  _object({
        "messages": {"type": "array", "minItems": 1, "items": {"type": "object"},
                     "description": "system/user/assistant messages (other roles are ignored); the last "
                                    "user or assistant message is the turn."},
        "model": {**_ANY, "description": "Echoed in the answer; the served model name when absent."},
        "stream": {**_ANY, "description": "true, 1, \"yes\", \"on\" … stream the answer as chunks."},
    }, ["messages"], closed=False)),
    "OpenAIChatCompletion": _record({
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": _ANY,
        "choices": {"type": "array", "items": _record({
            "index": {"type": "integer"},
            "message": _record({"role": {"const": "assistant"}, "content": {"type": "string"}}),
            "finish_reason": {"type": "string"},
        })},
        "usage": _record({"prompt_tokens": _COUNTER, "completion_tokens": _COUNTER, "total_tokens": _COUNTER}),
    }),
    "Usage": _record({"input_tokens": _COUNTER, "output_tokens": _COUNTER, "total_tokens": _COUNTER}),
    "Health": _record({
        "status": {"const": "ok"},
        "platform": {"const": "hermes-agent"},
        "version": {"type": "string"},
    }),
    "HealthDetailed": _record({
        "status": _STATUS,
        "readiness": _record({
            "status": _STATUS,
            "checks": {"type": "object", "additionalProperties": _CHECK},
        }),
        "platform": {"const": "hermes-agent"},
        "version": {"type": "string"},
        "gateway_state": _nullable("string"),
        "platforms": {"type": "object"},
        "active_agents": _COUNTER,
        "gateway_busy": {"type": "boolean"},
        "gateway_drainable": {"type": "boolean"},
        "exit_reason": _nullable("string"),
        "updated_at": _nullable("string"),
        "pid": {"type": "integer"},
    }),
    "ModelList": _record({
        "object": {"const": "list"},
        "data": {"type": "array", "items": _record({
            "id": {"type": "string"},
            "object": {"const": "model"},
            "created": {"type": "integer"},
            "owned_by": {"type": "string"},
            "permission": {"type": "array"},
            "root": {"type": "string"},
            "parent": _nullable("string"),
        })},
    }),
    "Capabilities": _record({
        "object": {"const": "hermes.api_server.capabilities"},
        "platform": {"const": "hermes-agent"},
        "model": {"type": "string"},
        "auth": _record({"type": {"const": "bearer"}, "required": {"type": "boolean"}}),
        "runtime": {"type": "object"},
        "features": {"type": "object", "additionalProperties": {"type": ["boolean", "string"]}},
        "endpoints": {"type": "object", "additionalProperties": _record({
            "method": {"type": "string"},
            "path": {"type": "string"},
        })},
    }),
    "OpenAPIDocument": {"type": "object", "required": ["openapi", "info", "paths"]},
    # The /_fixture/ control API (serve --fixture-api); formats in docs/fixtures.md.
    "FixtureRequest": {"type": "object", "description": "A fixture, fault list, reset or clock document "
                                                       "(docs/fixtures.md)."},
    "FixtureReply": {"type": "object", "required": ["object"], "properties": {"object": {"type": "string"}}},
    **JOBS_SCHEMAS,
    **RUN_SCHEMAS,
}


def _json_response(description: str, schema: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref("schemas", schema)}}}


def _error(description: str) -> dict[str, Any]:
    return _json_response(description, "Error")


_SESSION_ID_HEADER = {"X-Hermes-Session-Id": {
    "description": "The session the turn ended on (differs from the path id when compression rotated it).",
    "schema": {"type": "string"},
}}

RESPONSES: dict[str, Any] = {
    "Health": _json_response("Liveness; needs no key.", "Health"),
    "HealthDetailed": _json_response("Readiness checks and runtime counters.", "HealthDetailed"),
    "ModelList": _json_response("The advertised model.", "ModelList"),
    "Capabilities": _json_response("What this server serves.", "Capabilities"),
    "OpenAPIDocument": _json_response("This document.", "OpenAPIDocument"),
    "FixtureReply": _json_response("What the control call did, or the journal, faults or clock.", "FixtureReply"),
    "InspectorFile": {"description": "A file of the inspector page (HTML, JavaScript or CSS); it holds no data.",
                      "content": {"text/html": {"schema": {"type": "string"}}}},
    "Session": _json_response("The session, as the client-safe projection.", "SessionEnvelope"),
    "SessionList": _json_response("One page of sessions.", "SessionList"),
    "SessionDeleted": _json_response("The session row is gone.", "SessionDeleted"),
    "MessageList": _json_response("The active messages of the resolved transcript.", "MessageList"),
    "ChatCompletion": {**_json_response("The assistant's reply for one turn.", "ChatCompletion"),
                       "headers": _SESSION_ID_HEADER},
    "ChatStream": {
        "description": "Server-sent events: run.started, message.started, deltas, completion, done.",
        "headers": _SESSION_ID_HEADER,
        "content": {"text/event-stream": {"schema": ref("schemas", "StreamEvent")}},
    },
    "OpenAIChatCompletion": {
        "description": "The turn as a `chat.completion`, or with `stream` as `data:` chunks "
                       "(`chat.completion.chunk`, the last one with `usage`), then `data: [DONE]`.",
        "headers": _SESSION_ID_HEADER,
        "content": {"application/json": {"schema": ref("schemas", "OpenAIChatCompletion")},
                    "text/event-stream": {"schema": _object({
                        "data": {"type": "string", "description": "A `chat.completion.chunk` as JSON, or `[DONE]`."},
                    }, ["data"], closed=False)}},
    },
    "BadRequest": _error("Invalid JSON, a body that is not an object, or an invalid field."),
    "Unauthorized": _error("Missing or wrong bearer key (envelope without `param`)."),
    "Forbidden": _error("X-Hermes-Session-Key sent to a server without an API key."),
    "NotFound": {
        "description": "No session has this exact id (`session_not_found`); or, as text/plain "
                       "`404: Not Found`, an id segment no route matches (one with `{` or `}`).",
        "content": {"application/json": {"schema": ref("schemas", "Error")},
                    "text/plain": {"schema": {"const": "404: Not Found"}}},
    },
    "Conflict": _error("A session with this id already exists (`session_exists`)."),
    "PayloadTooLarge": _error("Body over 10,000,000 bytes (`body_too_large`)."),
    "ServerError": _error("The agent failed during the turn (`server_error`)."),
    "Unavailable": _error("state.db cannot be opened, or its storage fails under it: a full disk, a read-only "
                          "file, an I/O error (`session_db_unavailable`; the message names the cause)."),
    **JOBS_RESPONSES,
    **RUN_RESPONSES,
}

PARAMETERS: dict[str, Any] = {
    "session_id": {
        "name": "session_id", "in": "path", "required": True,
        "description": "One path segment, percent-decoded (`a%2Fb` addresses the id `a/b`). "
                       "A segment with `{` or `}` matches no route (404 text/plain), as upstream.",
        "schema": {"type": "string", "minLength": 1, "pattern": "^[^{}]+$"},
    },
    "limit": {"name": "limit", "in": "query", "description": "Page size; default 50, capped at 200. "
              "Unparsable or negative values mean the default.", "schema": {"type": "string"}},
    "offset": {"name": "offset", "in": "query", "description": "Rows to skip; default 0, capped at 1,000,000.",
               "schema": {"type": "string"}},
    "source": {"name": "source", "in": "query", "description": "Exact match on the session source.",
               "schema": {"type": "string"}},
    "include_children": {"name": "include_children", "in": "query",
                         "description": "1/true/yes/on include child sessions.", "schema": {"type": "string"}},
    "X-Hermes-Session-Id": {"name": "X-Hermes-Session-Id", "in": "header",
                            "description": "Continue (or create) this session: the model sees its stored history "
                                           "and the turn is stored there. Needs a server key.",
                            "schema": {"type": "string", "maxLength": 256}},
    "Idempotency-Key": {"name": "Idempotency-Key", "in": "header",
                        "description": "A non-streaming retry with the same key and request gets the first "
                                       "answer's turn again (for 300 s) instead of a new turn.",
                        "schema": {"type": "string"}},
    **{f"journal_{name}": {"name": name, "in": "query", "description": description, "schema": {"type": "string"}}
       for name, description in (
           ("route", "Only requests to this route name."),
           ("method", "Only requests with this method."),
           ("session_id", "Only requests naming this session id."),
           ("status", "Only answers with this status."),
           ("bodies", "true: include request and response bodies."),
       )},
    "X-Hermes-Session-Key": {"name": "X-Hermes-Session-Key", "in": "header",
                             "description": "Long-term memory scope of the turn (at most 256 characters).",
                             "schema": {"type": "string", "maxLength": 256}},
    **JOBS_PARAMETERS,
    **RUN_PARAMETERS,
}
