"""OpenAPI fragments for the herm.run routes: the responses, schemas, parameters and
security scheme their operations name (routes.py), merged into the server's document
(`COMPONENTS`) only when the dialect is served.
"""

from __future__ import annotations

from typing import Any

from hermes_server.hermrun.projection import USAGE_COUNTERS
from hermes_server.hermrun.requests import MAX_LIMIT
from hermes_server.hermrun.rules import STATUSES

# The security scheme every herm.run operation names.
SECURITY = "hermRunKey"
SECURITY_SCHEMES = {SECURITY: {"type": "apiKey", "in": "header", "name": "x-api-key"}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _record(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """A closed object; every property not named `optional` is required."""
    return {"type": "object", "properties": properties,
            "required": [k for k in properties if k not in optional], "additionalProperties": False}


_TEXT = {"type": "string", "minLength": 1}
_NULLABLE_TEXT = {"type": ["string", "null"]}
_METADATA = {"type": "object", "additionalProperties": {"type": "string"}}
_TIME = {"type": "string", "format": "date-time"}
# In a request body `null` counts as absent, so every optional field also takes it.
_OPTIONAL_TEXT = {"type": ["string", "null"], "minLength": 1}
_OPTIONAL_FLAG = {"type": ["boolean", "null"]}
_OPTIONAL_METADATA = {**_METADATA, "type": ["object", "null"]}

SCHEMAS: dict[str, Any] = {
    "HermRunUsage": _record({
        **{key: {"type": "integer", "minimum": 0} for key in USAGE_COUNTERS},
        "estimated_cost_usd": {"type": "number", "minimum": 0},
        "context_max": {"type": ["integer", "null"]},
    }),
    "HermRunSession": _record({
        "object": {"const": "agent.session"}, "id": _TEXT, "agentId": _TEXT, "agentVersion": _TEXT,
        "subjectId": _TEXT, "status": {"enum": list(STATUSES)}, "role": _NULLABLE_TEXT, "title": _NULLABLE_TEXT,
        "yoloMode": {"type": "boolean"}, "preview": {"type": "boolean"}, "tag": _NULLABLE_TEXT,
        "metadata": _METADATA, "usage": {"oneOf": [_ref("HermRunUsage"), {"type": "null"}]},
        "createdAt": _TIME, "updatedAt": _TIME,
    }),
    "HermRunSessionList": _record({
        "object": {"const": "list"}, "data": {"type": "array", "items": _ref("HermRunSession")},
        "limit": {"type": "integer"}, "offset": {"type": "integer"}, "hasMore": {"type": "boolean"},
    }),
    "HermRunSessionDeleted": _record({"object": {"const": "agent.session_deleted"}, "id": _TEXT,
                                      "deleted": {"const": True}}),
    "HermRunWarm": _record({"object": {"const": "sandbox.warm"}, "status": {"const": "warming"},
                            "reason": {"type": "null"}, "agentId": _TEXT, "subjectId": _TEXT}),
    "HermRunError": _record({"error": _record({
        "type": {"enum": ["validation_error", "unauthorized", "not_found", "invalid_state", "request_too_large",
                          "rate_limited", "unavailable"]},
        "message": {"type": "string"}, "param": _NULLABLE_TEXT,
    })}),
    "HermRunCreateSession": {**_record({
        "agentId": _TEXT, "subjectId": _TEXT, "role": _OPTIONAL_TEXT, "title": _OPTIONAL_TEXT,
        "yoloMode": _OPTIONAL_FLAG, "preview": _OPTIONAL_FLAG, "tag": _OPTIONAL_TEXT, "metadata": _OPTIONAL_METADATA,
    }, optional=("role", "title", "yoloMode", "preview", "tag", "metadata")), "additionalProperties": True},
    "HermRunUpdateSession": {**_record({"title": _OPTIONAL_TEXT, "yoloMode": _OPTIONAL_FLAG,
                                        "metadata": _OPTIONAL_METADATA},
                                       optional=("title", "yoloMode", "metadata")),
                             "minProperties": 1, "additionalProperties": True},
    "HermRunWarmRequest": {**_record({"agentId": _TEXT, "subjectId": _TEXT}), "additionalProperties": True},
}


def _json(description: str, schema: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}
    if headers:
        response["headers"] = headers
    return response


RESPONSES: dict[str, Any] = {
    "HermRunSession": _json("The session.", "HermRunSession"),
    "HermRunSessionList": _json("One page of sessions, newest first.", "HermRunSessionList"),
    "HermRunSessionDeleted": _json("The session and its history are gone.", "HermRunSessionDeleted"),
    "HermRunWarm": _json("The hint was taken; nothing was created.", "HermRunWarm"),
    "HermRunValidation": _json("`validation_error`: an invalid body or query; `param` names the field.",
                               "HermRunError"),
    "HermRunUnauthorized": _json("`unauthorized`: the x-api-key header is missing or wrong.", "HermRunError"),
    "HermRunNotFound": _json("`not_found`: no such agent or session.", "HermRunError"),
    "HermRunInvalidState": _json("`invalid_state`: the session has a running or waiting turn.", "HermRunError"),
    "HermRunTooLarge": _json("`request_too_large`: the body is over the server's limit.", "HermRunError"),
    "HermRunRateLimited": _json(
        "`rate_limited`: the agent's per-subject conversation allowance is spent for this window.", "HermRunError",
        {"Retry-After": {"description": "Whole seconds until the window ends.", "schema": {"type": "integer"}}}),
    "HermRunUnavailable": _json("`unavailable`: herm-run.db cannot be opened right now.", "HermRunError"),
}


def _query(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": "string"}}


PARAMETERS: dict[str, Any] = {
    "herm_run_agentId": _query("agentId", "Only sessions of this agent."),
    "herm_run_agent": _query("agent", "Alias of agentId; if both are given they must match."),
    "herm_run_subjectId": _query("subjectId", "Only sessions of this subject."),
    "herm_run_subject": _query("subject", "Alias of subjectId; if both are given they must match."),
    "herm_run_status": _query("status", "idle, running or archived (waiting_on_human is refused). "
                                        "Without it, archived sessions are left out."),
    "herm_run_limit": _query("limit", f"Page size, 1 to {MAX_LIMIT}; default 50."),
    "herm_run_offset": _query("offset", "Sessions to skip; default 0."),
}

# What the dialect adds to the OpenAPI document's `components` when it is served.
COMPONENTS: dict[str, dict[str, Any]] = {
    "securitySchemes": SECURITY_SCHEMES, "parameters": PARAMETERS, "responses": RESPONSES, "schemas": SCHEMAS,
}
