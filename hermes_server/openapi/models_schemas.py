"""OpenAPI components of 0.20+'s model routes (`GET /api/model/options`,
`POST /api/sessions/{session_id}/model`). Added to the document only by a profile that serves
them (as a dialect's components are), so the 0.19.0 document stays as it is."""

from __future__ import annotations

from typing import Any


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(description: str, schema: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


_TEXT_OR_NULL = {"type": ["string", "null"]}

MODEL_OPTIONS_COMPONENTS: dict[str, dict[str, Any]] = {
    "parameters": {
        "refresh": {"name": "refresh", "in": "query", "description": "`1`, `true`, `yes` or `on`: upstream "
                    "re-reads its provider catalogues; accepted here, where the inventory is fixed.",
                    "schema": {"type": "string"}},
    },
    "schemas": {
        "ModelOptions": {"type": "object", "required": ["providers", "model", "provider"], "properties": {
            "providers": {"type": "array", "items": {"type": "object", "required": ["slug", "models"], "properties": {
                "slug": {"type": "string"}, "name": {"type": "string"},
                "models": {"type": "array", "items": {"type": "string"}}, "total_models": {"type": "integer"},
                "is_current": {"type": "boolean"}, "is_user_defined": {"type": "boolean"},
                "authenticated": {"type": "boolean"},
            }}},
            "model": {"type": "string"},
            "provider": {"type": "string"},
        }},
    },
    "responses": {
        "ModelOptions": _json("The models this server routes to: one provider row, the configured agent "
                              "answering as --model-name (docs/versions.md).", "ModelOptions"),
    },
}

MODEL_LOCK_COMPONENTS: dict[str, dict[str, Any]] = {
    "schemas": {
        "ModelLockRequest": {"type": "object", "properties": {
            "model": {"type": "string", "description": "The model, or `provider::model`."},
            "model_id": {"type": "string", "description": "Alias of `model`."},
            "provider": {"type": "string"},
            "provider_id": {"type": "string", "description": "Alias of `provider`."},
            "model_options": {"type": "object", "description": "Kept with the lock as given."},
        }},
        "ModelLock": {"type": "object", "required": ["object", "session_id", "runtime"], "properties": {
            "object": {"const": "hermes.session.model_lock"},
            "session_id": {"type": "string"},
            "runtime": {"type": "object", "properties": {
                "provider": {"type": "string"}, "model": {"type": "string"},
                "route_source": {"const": "session_model_lock"},
                "requested": {"type": "object", "properties": {"provider": _TEXT_OR_NULL, "model": _TEXT_OR_NULL}},
                "model_lock": {"const": "accepted"},
            }},
        }},
    },
    "responses": {
        "ModelLock": _json("The lock is stored in the session's model_config; later turns use it.", "ModelLock"),
        "ModelLockUnavailable": _json("The requested model is not one this server routes to "
                                      "(`model_lock_unavailable`); nothing was stored.", "Error"),
    },
}
