"""OpenAPI components of the structured runs (routes/runs.py)."""

from __future__ import annotations

from typing import Any

from hermes_server.domain.run_input import APPROVAL_CHOICES, CHOICE_ALIASES
from hermes_server.openapi.build import Components, json_answer, json_object, schema_ref, with_example
from hermes_server.openapi.common import ANY, INPUT_MESSAGE, TOKEN_USAGE, flag, text, text_or_null

# Every status a run's status object may read in 0.19.0.
RUN_STATUSES = ["queued", "running", "waiting_for_approval", "stopping", "completed", "failed", "cancelled"]

SCHEMAS: dict[str, Any] = {
    "RunRequest": with_example({"input": "Hello", "session_id": "demo"}, {
        "type": "object",
        "required": ["input"],
        "properties": {
            "input": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1,
                                                                      "items": INPUT_MESSAGE}],
                      "description": "The user's message as text, or a list of messages whose last one's `content` "
                                     "is the turn (the earlier ones are the history when neither "
                                     "`conversation_history` nor `previous_response_id` gives one). Empty or "
                                     "absent: 400 `Missing 'input' field`."},
            "instructions": text_or_null("Ephemeral system prompt, never stored."),
            "session_id": text("The session the turn is stored in (default: the run id).", minLength=1),
            "conversation_history": {"type": "array", "items": json_object({
                "role": {"type": "string"}, "content": text("Text (any other value is taken as its `str()`).")},
                ["role", "content"], closed=False), "description": "The history the model sees, given "
                "explicitly; each item needs `role` and `content`, else 400."},
            "previous_response_id": text("Continue a stored response's history (unknown ids are ignored)."),
            "model": text("Reported as the run's model; the served model name when absent. As upstream, any JSON "
                          "value is kept as sent."),
        },
    }),
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
    "RunApprovalRequest": with_example({"choice": "once"}, json_object({
        "choice": {"type": "string", "enum": list(APPROVAL_CHOICES), "description": (
            f"Any case; {', '.join(f'`{word}`' for word in CHOICE_ALIASES)} mean `once`. Anything else is 400 "
            "`invalid_approval_choice`.")},
        "all": flag("true: answer every pending approval of the run, not only the oldest."),
        "resolve_all": flag("Read as `all`."),
    }, ["choice"], closed=False)),
    "RunApprovalResponse": {"type": "object", "required": ["object", "run_id", "choice", "resolved"],
                            "additionalProperties": False, "properties": {
                                "object": {"const": "hermes.run.approval_response"}, "run_id": {"type": "string"},
                                "choice": {"type": "string"}, "resolved": {"type": "integer", "minimum": 1}}},
}

# What the run operations do beyond their fields and answers.
START_RUN = """\
Starts one agent turn in the background and answers 202 at once with the run's id; poll `GET \
/v1/runs/{run_id}` or follow its events. The turn is stored in `session_id` (default: the run id), and the \
cap on live agent work (`--max-concurrent-runs`) answers 429 past it."""

RUN_EVENTS = """\
The run's events as server-sent events: `data:` frames (no `event:` line) until `run.completed`, \
`run.failed` or `run.cancelled`, then `: stream closed`. A run has one queue, kept until a subscriber's \
stream ends (or 5 minutes with none): a client that subscribes after the run ended still gets every \
event, but two subscribers share them, and once a stream has ended the run's events are 404. Follow a \
run from one client."""

RESPONSES: dict[str, Any] = {
    "RunStarted": json_answer("The run is registered and its turn started.", "RunStarted"),
    "RunStatus": json_answer("The run's status; keys appear in the order they were first set.", "RunStatus"),
    "RunEvents": {"description": "`data:` frames of run events (no `event:` line), then `: stream closed`. "
                                 "One queue per run, dropped when a subscriber's stream ends.",
                  "content": {"text/event-stream": {"schema": json_object({
                      "data": {"type": "string", "contentMediaType": "application/json",
                               "contentSchema": schema_ref("RunEvent")},
                  }, ["data"], closed=False)}}},
    "RunStopping": json_answer("The run is being stopped; it ends as `cancelled`.", "RunStopping"),
    "RunApprovalResponse": json_answer("How many pending approvals the choice answered.", "RunApprovalResponse"),
}

PARAMETERS: dict[str, Any] = {
    "run_id": {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
}

COMPONENTS: Components = {"schemas": SCHEMAS, "responses": RESPONSES, "parameters": PARAMETERS}
