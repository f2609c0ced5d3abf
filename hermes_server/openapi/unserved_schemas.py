"""OpenAPI components of 0.21.2's routes hermes-server does not serve (routes/unserved.py): their 501
answer and the artifact id. Added to the document only by the profile that lists those routes."""

from __future__ import annotations

from typing import Any

from hermes_server.openapi.schemas import ref

UNSERVED_COMPONENTS: dict[str, dict[str, Any]] = {
    "responses": {
        "NotImplemented": {
            "description": "A Hermes 0.21.2 route this server does not serve (`not_implemented`; docs/differences.md).",
            "content": {"application/json": {"schema": ref("schemas", "Error")}}},
    },
    "parameters": {
        "artifact_id": {"name": "artifact_id", "in": "path", "required": True,
                        "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
    },
}
