"""OpenAPI components of health and discovery (routes/discovery.py)."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.build import Components, json_answer, nullable, record
from hermes_server.openapi.common import COUNTER

_STATUS = {"type": "string", "enum": ["ok", "degraded"]}
_CHECK = {
    "type": "object",
    "properties": {"status": _STATUS, "detail": {"type": "string"}},
    "required": ["status"],
}

SCHEMAS: dict[str, Any] = {
    "Health": record({
        "status": {"const": "ok"},
        "platform": {"const": "hermes-agent"},
        "version": {"type": "string"},
    }),
    "HealthDetailed": record({
        "status": _STATUS,
        "readiness": record({
            "status": _STATUS,
            "checks": {"type": "object", "additionalProperties": _CHECK},
        }),
        "platform": {"const": "hermes-agent"},
        "version": {"type": "string"},
        "gateway_state": nullable("string"),
        "platforms": {"type": "object"},
        "active_agents": COUNTER,
        "gateway_busy": {"type": "boolean"},
        "gateway_drainable": {"type": "boolean"},
        "exit_reason": nullable("string"),
        "updated_at": nullable("string"),
        "pid": {"type": "integer"},
    }),
    "ModelList": record({
        "object": {"const": "list"},
        "data": {"type": "array", "items": record({
            "id": {"type": "string"},
            "object": {"const": "model"},
            "created": {"type": "integer"},
            "owned_by": {"type": "string"},
            "permission": {"type": "array", "items": {}, "maxItems": 0},
            "root": {"type": "string"},
            "parent": nullable("string"),
        })},
    }),
    "Capabilities": record({
        "object": {"const": "hermes.api_server.capabilities"},
        "platform": {"const": "hermes-agent"},
        "model": {"type": "string"},
        "auth": record({"type": {"const": "bearer"}, "required": {"type": "boolean"}}),
        "runtime": {"type": "object"},
        "features": {"type": "object", "additionalProperties": {"type": ["boolean", "string"]}},
        "endpoints": {"type": "object", "additionalProperties": record({
            "method": {"type": "string"},
            "path": {"type": "string"},
        })},
    }),
    "OpenAPIDocument": {"type": "object", "required": ["openapi", "info", "paths"]},
}

COMPONENTS: Components = {
    "schemas": SCHEMAS,
    "responses": {
        "Health": json_answer("Liveness; needs no key.", "Health"),
        "HealthDetailed": json_answer("Readiness checks and runtime counters.", "HealthDetailed"),
        "ModelList": json_answer("The advertised model.", "ModelList"),
        "Capabilities": json_answer("What this server serves.", "Capabilities"),
        "OpenAPIDocument": json_answer("This document.", "OpenAPIDocument"),
    },
}
