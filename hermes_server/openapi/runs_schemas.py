"""OpenAPI components of the structured runs (routes/runs.py)."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, json_answer, schema_ref
from hermes_server.openapi.common import ANY, OPEN_INPUT, TOKEN_USAGE

# Every status a run's status object may read in 0.19.0.
RUN_STATUSES = ["queued", "running", "waiting_for_approval", "stopping", "completed", "failed", "cancelled"]

SCHEMAS: dict[str, Any] = {
    "RunRequest": {
        "type": "object",
        "required": ["input"],
        "properties": {
            "input": OPEN_INPUT,
            "instructions": {"type": ["string", "null"], "description": "Ephemeral system prompt, never stored."},
            "session_id": {"type": "string", "description": "The session the turn is stored in (default: the run id)."},
            "conversation_history": {"type": "array", "items": {"type": "object"}},
            "previous_response_id": {"type": "string", "description": "Continue a stored response's history "
                                                                      "(unknown ids are ignored)."},
            "model": ANY,
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
            "status": {"enum": RUN_STATUSES},
            "updated_at": {"type": "number"}, "created_at": {"type": "number"},
            "session_id": ANY, "model": ANY, "last_event": {"type": "string"},
            "output": {"type": ["string", "null"]}, "usage": TOKEN_USAGE, "error": {"type": "string"},
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
        "all": ANY, "resolve_all": ANY}},
    "RunApprovalResponse": {"type": "object", "required": ["object", "run_id", "choice", "resolved"],
                            "additionalProperties": False, "properties": {
                                "object": {"const": "hermes.run.approval_response"}, "run_id": {"type": "string"},
                                "choice": {"type": "string"}, "resolved": {"type": "integer", "minimum": 1}}},
}

RESPONSES: dict[str, Any] = {
    "RunStarted": json_answer("The run is registered and its turn started.", "RunStarted"),
    "RunStatus": json_answer("The run's status; keys appear in the order they were first set.", "RunStatus"),
    "RunEvents": {"description": "`data:` frames of run events (no `event:` line), then `: stream closed`. "
                                 "One queue per run, dropped when a subscriber's stream ends.",
                  "content": {"text/event-stream": {"schema": schema_ref("RunEvent")}}},
    "RunStopping": json_answer("The run is being stopped; it ends as `cancelled`.", "RunStopping"),
    "RunApprovalResponse": json_answer("How many pending approvals the choice answered.", "RunApprovalResponse"),
}

PARAMETERS: dict[str, Any] = {
    "run_id": {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
}

COMPONENTS: Components = {"schemas": SCHEMAS, "responses": RESPONSES, "parameters": PARAMETERS}
