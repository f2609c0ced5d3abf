"""Health and discovery endpoints that clients probe before using the session routes."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server import UPSTREAM_VERSION
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.services import Services


async def health(request: Request, svc: Services) -> Response:
    """GET /health and /v1/health: unauthenticated liveness, shaped like upstream."""
    return HermesJSONResponse({"status": "ok", "platform": "hermes-agent", "version": UPSTREAM_VERSION})
