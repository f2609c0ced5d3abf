"""OpenAPI fragments for the herm.run routes: the responses, schemas, parameters and
security scheme their operations name (routes.py), merged into the server's document
(`COMPONENTS`) only when the dialect is served.
"""

from __future__ import annotations

from typing import Any

from hermes_server.hermrun.projection import USAGE_COUNTERS
from hermes_server.hermrun.requests import MAX_LIMIT
from hermes_server.hermrun.rules import STATUSES
from hermes_server.openapi.build import json_answer, query_parameter, record, schema_ref

# The security scheme every herm.run operation names.
SECURITY = "hermRunKey"
SECURITY_SCHEMES = {SECURITY: {"type": "apiKey", "in": "header", "name": "x-api-key"}}


_TEXT = {"type": "string", "minLength": 1}
_NULLABLE_TEXT = {"type": ["string", "null"]}
_METADATA = {"type": "object", "additionalProperties": {"type": "string"}}
_TIME = {"type": "string", "format": "date-time"}
# In a request body `null` counts as absent, so every optional field also takes it.
_OPTIONAL_TEXT = {"type": ["string", "null"], "minLength": 1}
_OPTIONAL_FLAG = {"type": ["boolean", "null"]}
_OPTIONAL_METADATA = {**_METADATA, "type": ["object", "null"]}

SCHEMAS: dict[str, Any] = {
    "HermRunUsage": record({
        **{key: {"type": "integer", "minimum": 0} for key in USAGE_COUNTERS},
        "estimated_cost_usd": {"type": "number", "minimum": 0},
        "context_max": {"type": ["integer", "null"]},
    }),
    "HermRunSession": record({
        "object": {"const": "agent.session"}, "id": _TEXT, "agentId": _TEXT, "agentVersion": _TEXT,
        "subjectId": _TEXT, "status": {"enum": list(STATUSES)}, "role": _NULLABLE_TEXT, "title": _NULLABLE_TEXT,
        "yoloMode": {"type": "boolean"}, "preview": {"type": "boolean"}, "tag": _NULLABLE_TEXT,
        "metadata": _METADATA, "usage": {"oneOf": [schema_ref("HermRunUsage"), {"type": "null"}]},
        "createdAt": _TIME, "updatedAt": _TIME,
    }),
    "HermRunSessionList": record({
        "object": {"const": "list"}, "data": {"type": "array", "items": schema_ref("HermRunSession")},
        "limit": {"type": "integer"}, "offset": {"type": "integer"}, "hasMore": {"type": "boolean"},
    }),
    "HermRunSessionDeleted": record({"object": {"const": "agent.session_deleted"}, "id": _TEXT,
                                      "deleted": {"const": True}}),
    "HermRunWarm": record({"object": {"const": "sandbox.warm"}, "status": {"const": "warming"},
                            "reason": {"type": "null"}, "agentId": _TEXT, "subjectId": _TEXT}),
    "HermRunError": record({"error": record({
        "type": {"enum": ["validation_error", "unauthorized", "not_found", "invalid_state", "request_too_large",
                          "rate_limited", "unavailable"]},
        "message": {"type": "string"}, "param": _NULLABLE_TEXT,
    })}),
    "HermRunCreateSession": {**record({
        "agentId": _TEXT, "subjectId": _TEXT, "role": _OPTIONAL_TEXT, "title": _OPTIONAL_TEXT,
        "yoloMode": _OPTIONAL_FLAG, "preview": _OPTIONAL_FLAG, "tag": _OPTIONAL_TEXT, "metadata": _OPTIONAL_METADATA,
    }, optional=("role", "title", "yoloMode", "preview", "tag", "metadata")), "additionalProperties": True},
    "HermRunUpdateSession": {**record({"title": _OPTIONAL_TEXT, "yoloMode": _OPTIONAL_FLAG,
                                        "metadata": _OPTIONAL_METADATA},
                                       optional=("title", "yoloMode", "metadata")),
                             "minProperties": 1, "additionalProperties": True},
    "HermRunWarmRequest": {**record({"agentId": _TEXT, "subjectId": _TEXT}), "additionalProperties": True},
}


RESPONSES: dict[str, Any] = {
    "HermRunSession": json_answer("The session.", "HermRunSession"),
    "HermRunSessionList": json_answer("One page of sessions, newest first.", "HermRunSessionList"),
    "HermRunSessionDeleted": json_answer("The session and its history are gone.", "HermRunSessionDeleted"),
    "HermRunWarm": json_answer("The hint was taken; nothing was created.", "HermRunWarm"),
    "HermRunValidation": json_answer("`validation_error`: an invalid body or query; `param` names the field.",
                               "HermRunError"),
    "HermRunUnauthorized": json_answer("`unauthorized`: the x-api-key header is missing or wrong.", "HermRunError"),
    "HermRunNotFound": json_answer("`not_found`: no such agent or session.", "HermRunError"),
    "HermRunInvalidState": json_answer("`invalid_state`: the session has a running or waiting turn.", "HermRunError"),
    "HermRunTooLarge": json_answer("`request_too_large`: the body is over the server's limit.", "HermRunError"),
    "HermRunRateLimited": json_answer(
        "`rate_limited`: the agent's per-subject conversation allowance is spent for this window.", "HermRunError",
        {"Retry-After": {"description": "Whole seconds until the window ends.", "schema": {"type": "integer"}}}),
    "HermRunUnavailable": json_answer("`unavailable`: herm-run.db cannot be opened right now.", "HermRunError"),
}


PARAMETERS: dict[str, Any] = {
    "herm_run_agentId": query_parameter("agentId", "Only sessions of this agent."),
    "herm_run_agent": query_parameter("agent", "Alias of agentId; if both are given they must match."),
    "herm_run_subjectId": query_parameter("subjectId", "Only sessions of this subject."),
    "herm_run_subject": query_parameter("subject", "Alias of subjectId; if both are given they must match."),
    "herm_run_status": query_parameter("status", "idle, running or archived (waiting_on_human is refused). "
                                        "Without it, archived sessions are left out."),
    "herm_run_limit": query_parameter("limit", f"Page size, 1 to {MAX_LIMIT}; default 50."),
    "herm_run_offset": query_parameter("offset", "Sessions to skip; default 0."),
}

# What the dialect adds to the OpenAPI document's `components` when it is served.
COMPONENTS: dict[str, dict[str, Any]] = {
    "securitySchemes": SECURITY_SCHEMES, "parameters": PARAMETERS, "responses": RESPONSES, "schemas": SCHEMAS,
}
