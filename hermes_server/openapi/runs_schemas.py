"""OpenAPI components of the structured runs and the Responses API (merged into `openapi/schemas.py`'s tables).

Standalone on purpose (no import of `schemas.py`), so the merge is one line per table.
"""

from __future__ import annotations

from typing import Any


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(description: str, schema: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}
    if headers:
        answer["headers"] = headers
    return answer


_USAGE = {"type": "object", "properties": {k: {"type": "integer"} for k in
                                           ("input_tokens", "output_tokens", "total_tokens")}}
_ANY: dict[str, Any] = {}
_OPEN_INPUT = {"description": "A string, or a list of messages (the last one is the user message)."}

RUN_SCHEMAS: dict[str, Any] = {
    "RunRequest": {
        "type": "object",
        "required": ["input"],
        "properties": {
            "input": _OPEN_INPUT,
            "instructions": {"type": ["string", "null"], "description": "Ephemeral system prompt, never stored."},
            "session_id": {"type": "string", "description": "The session the turn is stored in (default: the run id)."},
            "conversation_history": {"type": "array", "items": {"type": "object"}},
            "previous_response_id": {"type": "string", "description": "Continue a stored response's history "
                                                                      "(unknown ids are ignored)."},
            "model": _ANY,
        },
    },
    "RunStarted": {"type": "object", "required": ["run_id", "status"], "additionalProperties": False,
                   "properties": {"run_id": {"type": "string", "pattern": "^run_[0-9a-f]{32}$"},
                                  "status": {"const": "started"}}},
    "RunStatus": {
        "type": "object",
        "required": ["object", "run_id", "status", "updated_at", "created_at", "session_id", "model"],
        "properties": {
            "object": {"const": "hermes.run"},
            "run_id": {"type": "string"},
            "status": {"enum": ["queued", "running", "waiting_for_approval", "stopping", "completed", "failed",
                                "cancelled"]},
            "updated_at": {"type": "number"}, "created_at": {"type": "number"},
            "session_id": _ANY, "model": _ANY, "last_event": {"type": "string"},
            "output": {"type": ["string", "null"]}, "usage": _USAGE, "error": {"type": "string"},
        },
    },
    "RunEvent": {"type": "object", "required": ["run_id", "timestamp", "event"], "properties": {
        "event": {"enum": ["message.delta", "reasoning.available", "tool.started", "tool.completed",
                           "approval.request", "approval.responded", "run.completed", "run.failed",
                           "run.cancelled"]},
        "run_id": {"type": "string"}, "timestamp": {"type": "number"}}},
    "RunStopping": {"type": "object", "required": ["run_id", "status"], "additionalProperties": False,
                    "properties": {"run_id": {"type": "string"}, "status": {"const": "stopping"}}},
    "RunApprovalRequest": {"type": "object", "properties": {
        "choice": {"type": "string", "description": "once, session, always or deny (approve/approved/allow: once)"},
        "all": _ANY, "resolve_all": _ANY}},
    "RunApprovalResponse": {"type": "object", "required": ["object", "run_id", "choice", "resolved"],
                            "additionalProperties": False, "properties": {
                                "object": {"const": "hermes.run.approval_response"}, "run_id": {"type": "string"},
                                "choice": {"type": "string"}, "resolved": {"type": "integer", "minimum": 1}}},
    "ResponseRequest": {
        "type": "object",
        "required": ["input"],
        "properties": {
            "input": _OPEN_INPUT, "instructions": _ANY, "previous_response_id": _ANY, "conversation": _ANY,
            "conversation_history": {"type": "array", "items": {"type": "object"}},
            "store": _ANY, "stream": _ANY, "model": _ANY, "truncation": _ANY,
        },
    },
    "Response": {
        "type": "object",
        "required": ["id", "object", "status", "created_at", "model", "output"],
        "properties": {
            "id": {"type": "string", "pattern": "^resp_[0-9a-f]{28}$"}, "object": {"const": "response"},
            "status": {"enum": ["in_progress", "completed", "failed", "incomplete"]},
            "created_at": {"type": "integer"}, "model": _ANY,
            "output": {"type": "array", "items": {"type": "object"}}, "usage": _USAGE, "error": {"type": "object"},
        },
    },
    "ResponseDeleted": {"type": "object", "required": ["id", "object", "deleted"], "additionalProperties": False,
                        "properties": {"id": {"type": "string"}, "object": {"const": "response"},
                                       "deleted": {"const": True}}},
}

_SESSION_ID = {"X-Hermes-Session-Id": {"description": "The session the response's turn is stored in.",
                                       "schema": {"type": "string"}}}

RUN_RESPONSES: dict[str, Any] = {
    "RunStarted": _json("The run is registered and its turn started.", "RunStarted"),
    "RunStatus": _json("The run's status; keys appear in the order they were first set.", "RunStatus"),
    "RunEvents": {"description": "`data:` frames of run events (no `event:` line), then `: stream closed`. "
                                 "One queue per run, dropped when a subscriber's stream ends.",
                  "content": {"text/event-stream": {"schema": _ref("RunEvent")}}},
    "RunStopping": _json("The run is being stopped; it ends as `cancelled`.", "RunStopping"),
    "RunApprovalResponse": _json("How many pending approvals the choice answered.", "RunApprovalResponse"),
    "TooManyRuns": {**_json("As many agent turns are live as the server allows (`rate_limit_exceeded`).", "Error"),
                    "headers": {"Retry-After": {"schema": {"type": "string"}}}},
    "ResponseObject": {
        **_json("The response (plain), or with `stream` its `response.*` events.", "Response", _SESSION_ID),
        "content": {"application/json": {"schema": _ref("Response")},
                    "text/event-stream": {"schema": {"type": "object", "description": "`event: response.*` frames, "
                                                     "each payload ending with its `sequence_number`."}}},
    },
    "StoredResponse": _json("The stored response object, exactly as it was answered.", "Response"),
    "ResponseDeleted": _json("The response is no longer stored.", "ResponseDeleted"),
}

RUN_PARAMETERS: dict[str, Any] = {
    "run_id": {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
    "response_id": {"name": "response_id", "in": "path", "required": True,
                    "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
}

# 0.20+'s steer route: added to the document only by a profile that serves it (routes/models.py `ADDED`),
# so the 0.19.0 document stays as it is.
RUN_STEER_COMPONENTS: dict[str, dict[str, Any]] = {
    "schemas": {
        "RunSteerRequest": {"type": "object", "properties": {
            "input": _ANY, "message": _ANY, "text": _ANY}, "description": "The first non-empty of `input`, "
            "`message`, `text`: a string or text parts, non-blank once stripped."},
        "RunSteer": {"type": "object", "required": ["object", "run_id", "accepted"], "additionalProperties": False,
                     "properties": {"object": {"const": "hermes.run.steer"}, "run_id": {"type": "string"},
                                    "accepted": {"const": True}}},
    },
    "responses": {
        "RunSteer": _json("The running agent took the text; a `run.steered` event is queued.", "RunSteer"),
    },
}

# 0.21's submit answer, replacing `RunStarted` in a profile that sends `replayed`: a new run is
# `started`; a replay of an Idempotency-Key names the run it admitted, with that run's status now.
RUN_REPLAYED_COMPONENTS: dict[str, dict[str, Any]] = {
    "schemas": {
        "RunStarted": {"type": "object", "required": ["run_id", "status", "replayed"], "additionalProperties": False,
                       "properties": {"run_id": {"type": "string", "pattern": "^run_[0-9a-f]{32}$"},
                                      "status": {"enum": ["started", "queued", "running", "waiting_for_approval",
                                                          "stopping", "completed", "failed", "cancelled",
                                                          "interrupted"]},
                                      "replayed": {"type": "boolean"}}},
    },
}
