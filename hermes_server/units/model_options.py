"""0.20's `GET /api/model/options`: the models a session can be locked to (domain/model_lock.py)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.build import json_answer, query_parameter
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.routes.common import inventory
from hermes_server.units.unit import Unit


async def model_options(request: Request, ctx: AppContext) -> Response:
    """GET /api/model/options: the picker inventory. `refresh` is accepted (upstream busts its
    provider cache with it); the inventory here is fixed, so it changes nothing."""
    return HermesJSONResponse(inventory(ctx).payload())


def _routes() -> list[Route]:
    return [Route(route_ids.MODEL_OPTIONS, "/api/model/options", {
        "GET": Method(model_options, Operation(
            summary="List model options",
            description="The models a session can be locked to: the configured agent, answering as `--model-name`.",
            responses={200: "ModelOptions", **AUTH_ERRORS},
            capability="model_options", features=("model_options",), query=("refresh",)))})]


UNIT = Unit(
    name="model_options",
    routes=_routes,
    components={
        "parameters": {
            "refresh": query_parameter("refresh", "`1`, `true`, `yes` or `on`: upstream re-reads its provider "
                                                  "catalogues; accepted here, where the inventory is fixed."),
        },
        "schemas": {
            "ModelOptions": {"type": "object", "required": ["providers", "model", "provider"], "properties": {
                "providers": {"type": "array", "items": {"type": "object", "required": ["slug", "models"],
                                                         "properties": {
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
            "ModelOptions": json_answer("The models this server routes to: one provider row, the configured agent "
                                        "answering as --model-name (docs/versions.md).", "ModelOptions"),
        },
    },
)
