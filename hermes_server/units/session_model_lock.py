"""0.20's `POST /api/sessions/{session_id}/model` (https://github.com/NousResearch/hermes-agent/pull/70950):
lock a session to a model this server
routes to (the rules: domain/model_lock.py; the write: store/model_lock.py)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import session_not_found
from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.model_lock import LockRequest
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.openapi.build import json_answer
from hermes_server.openapi.common import BODY_ERRORS, SESSION_ERRORS
from hermes_server.routes.common import existing_session, inventory
from hermes_server.store import model_lock
from hermes_server.units.unit import Unit


async def lock_model(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/model: lock the session to a model this server routes to."""
    session_id = request.path_params["session_id"]
    await existing_session(ctx, session_id)
    wanted = LockRequest.parse(await read_json_object(request))
    provider, model = wanted.route(inventory(ctx))
    if not await ctx.db.write(model_lock.set_model_lock, session_id, model, wanted.stored(provider, model, ctx.now())):
        raise session_not_found(session_id)
    return HermesJSONResponse(wanted.answer(session_id, provider, model))


def _routes() -> list[Route]:
    # A write to the session: after a rotation, a connector locks the id the answer named.
    return [Route(route_ids.SESSION_MODEL_LOCK, "/api/sessions/{session_id}/model", {
        "POST": Method(lock_model, Operation(
            summary="Lock a session's model",
            description="Locks the session to a model this server routes to; later turns report it as their "
                        "`runtime` (`route_source` `session_model_lock`).",
            responses={200: "ModelLock", 409: "ModelLockUnavailable", **BODY_ERRORS, **SESSION_ERRORS},
            capability="session_model_lock", features=("session_model_lock",), body="ModelLockRequest",
            effect=Effect.WRITE))})]


_TEXT_OR_NULL: dict[str, Any] = {"type": ["string", "null"]}

UNIT = Unit(
    name="session_model_lock",
    routes=_routes,
    components={
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
                    "requested": {"type": "object", "properties": {"provider": _TEXT_OR_NULL,
                                                                   "model": _TEXT_OR_NULL}},
                    "model_lock": {"const": "accepted"},
                }},
            }},
        },
        "responses": {
            "ModelLock": json_answer("The lock is stored in the session's model_config; later turns use it.",
                                     "ModelLock"),
        },
    },
)
