"""0.20+'s model routes: `GET /api/model/options` and `POST /api/sessions/{session_id}/model`;
and the table of what each profile addition adds to the route table and the OpenAPI document (`ADDED`).

Served only by a profile that has them (domain/profiles.py `Addition`); `with_additions`
places each after the route upstream's table lists it after, once, when the app is built.
The inventory and the lock rules are domain/model_lock.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import session_not_found
from hermes_server.context import AppContext
from hermes_server.domain.model_lock import Inventory, LockRequest
from hermes_server.domain.profiles import Addition, Profile
from hermes_server.http.body import read_json_object
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.models_schemas import MODEL_LOCK_COMPONENTS, MODEL_OPTIONS_COMPONENTS
from hermes_server.openapi.runs_schemas import RUN_REPLAYED_COMPONENTS, RUN_STEER_COMPONENTS
from hermes_server.openapi.schemas import AUTH_ERRORS, BODY_ERRORS, SESSION_ERRORS
from hermes_server.openapi.unserved_schemas import UNSERVED_COMPONENTS
from hermes_server.routes.common import existing_session
from hermes_server.store import model_lock


def inventory(ctx: AppContext) -> Inventory:
    settings = ctx.settings
    return Inventory.of(settings.agent, settings.model_name, settings.agent_model)


async def model_options(request: Request, ctx: AppContext) -> Response:
    """GET /api/model/options: the picker inventory. `refresh` is accepted (upstream busts its
    provider cache with it); the inventory here is fixed, so it changes nothing."""
    return HermesJSONResponse(inventory(ctx).payload())


async def lock_model(request: Request, ctx: AppContext) -> Response:
    """POST /api/sessions/{id}/model: lock the session to a model this server routes to."""
    session_id = request.path_params["session_id"]
    await existing_session(ctx, session_id)
    wanted = LockRequest.parse(await read_json_object(request))
    provider, model = wanted.route(inventory(ctx))
    if not await ctx.db.write(model_lock.set_model_lock, session_id, model, wanted.stored(provider, model, ctx.now())):
        raise session_not_found(session_id)
    return HermesJSONResponse(wanted.answer(session_id, provider, model))


def options_route() -> Route:
    return Route("model_options", "/api/model/options", {
        "GET": Method(model_options, Operation(
            summary="The models a session can be locked to", responses={200: "ModelOptions", **AUTH_ERRORS},
            capability="model_options", features=("model_options",), query=("refresh",)))})


def lock_route() -> Route:
    return Route("session_model_lock", "/api/sessions/{session_id}/model", {
        "POST": Method(lock_model, Operation(
            summary="Lock the session to a model (later turns use it)",
            responses={200: "ModelLock", 409: "ModelLockUnavailable", **BODY_ERRORS, **SESSION_ERRORS},
            capability="session_model_lock", features=("session_model_lock",), body="ModelLockRequest"))})


# Each addition: the route it adds, the route upstream lists it after, its OpenAPI components.
# No route (None): the addition's own module puts it in its table (route modules never import
# each other), as routes/runs.py does with steer.
ADDED: tuple[tuple[Addition, Callable[[], Route] | None, str, dict[str, dict[str, Any]]], ...] = (
    (Addition.MODEL_OPTIONS, options_route, "models", MODEL_OPTIONS_COMPONENTS),
    (Addition.SESSION_MODEL_LOCK, lock_route, "session_chat_stream", MODEL_LOCK_COMPONENTS),
    (Addition.RUN_STEER, None, "run_approval", RUN_STEER_COMPONENTS),
    (Addition.RUN_SUBMIT_REPLAYED, None, "runs", RUN_REPLAYED_COMPONENTS),
    (Addition.UNSERVED_0_21, None, "capabilities", UNSERVED_COMPONENTS),
)


def with_additions(routes: list[Route], profile: Profile) -> list[Route]:
    """`routes` with the profile's added routes, each after its upstream neighbour."""
    served = list(routes)
    for addition, build, after, _ in ADDED:
        if build is not None and addition in profile:
            at = next(i for i, route in enumerate(served) if route.name == after)
            served.insert(at + 1, build())
    return served


def components(profile: Profile) -> dict[str, dict[str, Any]]:
    """The OpenAPI components the profile's added routes name, by section."""
    merged: dict[str, dict[str, Any]] = {}
    for addition, _, _, parts in ADDED:
        if addition in profile:
            for section, entries in parts.items():
                merged.setdefault(section, {}).update(entries)
    return merged
