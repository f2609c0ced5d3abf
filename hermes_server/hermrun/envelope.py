"""herm.run's responses: compact UTF-8 JSON, and the one mapping of typed errors to them.

Every herm.run refusal is `{"error": {"type", "message", "param"}}` with the status its
type implies; nothing else formats one. The Hermes routes' envelope and security
headers are upstream Hermes's, not herm.run's, and are not used here.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from hermes_server.hermrun.errors import HermRunError
from hermes_server.http.responses import ExactResponse

JSON_TYPE = "application/json"


def dumps(payload: Any) -> bytes:
    """Compact UTF-8 JSON; a character UTF-8 cannot carry (a lone surrogate echoed from a
    request) is written as its `\\uXXXX` escape, which is the same JSON string."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


class HermRunJSON(ExactResponse):
    media_type = JSON_TYPE

    def __init__(self, payload: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(dumps(payload), status_code=status_code, headers=headers)


def error_response(exc: HermRunError) -> Response:
    return HermRunJSON(exc.body(), exc.status, exc.headers or None)
