"""OpenAPI components of skills, toolsets, platform events and the cron fire webhook (routes/catalog.py)."""

from __future__ import annotations

from hermes_server.openapi.build import Components, json_answer

# The managed-cron fire webhook's own scheme: a bearer token the cron service mints, not the API key.
FIRE_TOKEN = "fireToken"

_NULLABLE_TEXT = {"type": ["string", "null"]}

COMPONENTS: Components = {
    "securitySchemes": {
        FIRE_TOKEN: {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                     "description": "A token of the managed-cron service; with no verifier configured, none is valid."},
    },
    "schemas": {
        "SkillList": {"type": "object", "required": ["object", "data"], "properties": {
            "object": {"const": "list"},
            "data": {"type": "array", "items": {"type": "object", "required": ["name", "description", "category"],
                                                "properties": {"name": {"type": "string"},
                                                               "description": {"type": "string"},
                                                               "category": _NULLABLE_TEXT}}}}},
        "ToolsetList": {"type": "object", "required": ["object", "platform", "data"], "properties": {
            "object": {"const": "list"}, "platform": {"const": "api_server"},
            "data": {"type": "array", "items": {"type": "object", "required": ["name", "tools"]}}}},
    },
    "responses": {
        "SkillList": json_answer("Skills installed in HERMES_HOME.", "SkillList"),
        "ToolsetList": json_answer("The toolsets of the server's agent.", "ToolsetList"),
        "PlatformUnavailable": json_answer("No platform adapter is connected (`platform_unavailable`).", "Error"),
        "InvalidFireToken": json_answer("No fire-token verifier is configured: `{\"error\": \"invalid fire token\"}`.",
                                        "BareError"),
    },
    "parameters": {
        "platform": {"name": "platform", "in": "path", "required": True, "schema": {"type": "string"}},
    },
}
