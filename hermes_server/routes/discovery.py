"""Health and discovery endpoints that clients probe before using the session routes.

Shapes follow upstream 0.19.0 field for field. What they claim comes from the live
route table (each route's `Operation`s), so `/v1/capabilities` and `/openapi.json`
can only advertise what this instance actually serves.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain import readiness, route_ids
from hermes_server.domain.errors import DatabaseUnavailable, SchemaMismatch
from hermes_server.domain.profiles import ENDPOINTS_0_19, FEATURES_0_19, Features
from hermes_server.domain.route_ids import RouteId
from hermes_server.families import Family
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.openapi.discovery_schemas import COMPONENTS
from hermes_server.openapi.document import build_document, method_rank, operations
from hermes_server.store import health as store_health
from hermes_server.store import home_check as store_home

PLATFORM = "hermes-agent"

# 0.19.0's runtime block, word for word: clients compare it, and hermes-server, like the
# server it stands in for, runs the agent (and any tool) inside the server process.
RUNTIME = {
    "mode": "server_agent",
    "tool_execution": "server",
    "split_runtime": False,
    "description": (
        "The API server creates a server-side Hermes AIAgent; tools execute on the API-server host "
        "unless a future explicit split-runtime mode is enabled."
    ),
}


async def health(request: Request, ctx: AppContext) -> Response:
    """GET /health and /v1/health: unauthenticated liveness, shaped like upstream."""
    return HermesJSONResponse({"status": "ok", "platform": PLATFORM, "version": ctx.version})


async def _state_db_check(ctx: AppContext) -> dict[str, Any]:
    """Read the schema through the reader pool; a missing state.db is not created by a probe."""
    if not ctx.db.is_open and not store_home.present(ctx.settings.db_path):
        # A home that could not hold it is not "not initialized": say why (by class) instead.
        reason = ctx.db.home_problems.check()
        return readiness.check(readiness.DEGRADED, reason) if reason else readiness.check(readiness.OK, "not initialized")
    try:
        await ctx.db.read(store_health.ping)
    except (DatabaseUnavailable, SchemaMismatch, sqlite3.Error) as exc:
        # Only the class name: never paths or messages, which may carry secrets.
        return readiness.check(readiness.DEGRADED, type(store_home.cause(exc)).__name__)
    return readiness.check(readiness.OK)


def _disk_check(home: Path) -> dict[str, Any]:
    """Usage of the filesystem holding HERMES_HOME (its nearest existing ancestor before first use)."""
    probe = home
    while not store_home.present(probe) and probe != probe.parent:
        probe = probe.parent
    try:
        usage = shutil.disk_usage(probe)
    except OSError as exc:
        return readiness.check(readiness.DEGRADED, type(exc).__name__)
    return readiness.disk_check(usage.total, usage.used, usage.free)


async def health_detailed(request: Request, ctx: AppContext) -> Response:
    """GET /health/detailed: upstream's readiness report, describing this process."""
    state = "running"
    platforms = {"api_server": {
        "state": "connected", "error_code": None, "error_message": None, "updated_at": ctx.started_at,
    }}
    # Chat turns still running, including those whose client has gone (they finish anyway).
    active = len(ctx.turns)
    checks = {
        "state_db": await _state_db_check(ctx),
        "config": readiness.check(readiness.OK),
        "model": readiness.check(readiness.OK if ctx.settings.model_name.strip() else readiness.DEGRADED),
        "disk": _disk_check(ctx.settings.home),
        "gateway": readiness.gateway_check(state, platforms),
        # hermes-server has no run queue, process completions or delegations.
        "background_queues": readiness.check(
            readiness.OK, active_api_runs=ctx.runs.active_count(), process_completions=0, active_delegations=0),
    }
    status = readiness.overall(checks)
    return HermesJSONResponse({
        "status": status,
        "readiness": {"status": status, "checks": checks},
        "platform": PLATFORM,
        "version": ctx.version,
        "gateway_state": state,
        "platforms": platforms,
        "active_agents": active,
        "gateway_busy": readiness.gateway_busy(state, active),
        "gateway_drainable": readiness.gateway_drainable(state),
        "exit_reason": None,
        "updated_at": ctx.started_at,
        "pid": os.getpid(),
    })


async def models(request: Request, ctx: AppContext) -> Response:
    """GET /v1/models: the one advertised model (hermes-server has no model-route aliases)."""
    name = ctx.settings.model_name
    return HermesJSONResponse({"object": "list", "data": [{
        "id": name, "object": "model", "created": int(ctx.now()), "owned_by": "hermes",
        "permission": [], "root": name, "parent": None,
    }]})


def _rank(order: tuple[RouteId, ...]) -> Callable[[tuple[Route, str, Operation]], tuple[int, tuple[int, str], str]]:
    """Where an advertised operation is listed: by its route's place in the release's order, then by
    method; one whose route the order does not name comes last, by name."""
    def rank(served: tuple[Route, str, Operation]) -> tuple[int, tuple[int, str], str]:
        route, method, op = served
        listed = order.index(route.name) if route.name in order else len(order)
        return listed, method_rank(method) if listed < len(order) else (0, ""), op.capability or ""
    return rank


def _value(value: Any) -> Any:
    """A flag's value as answered: profile data is read-only mappings and tuples, answered as fresh
    dicts and lists (so an answer may adjust its copy, as `durable` below)."""
    if isinstance(value, Mapping):
        return {key: _value(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_value(item) for item in value]
    return value


def capabilities_body(routes: Iterable[Route], *, model: str, key_required: bool, cors: bool,
                      features: Features = FEATURES_0_19,
                      endpoint_order: tuple[RouteId, ...] = ENDPOINTS_0_19) -> dict[str, Any]:
    """Upstream's capabilities object, with features and endpoints derived from `routes`, named
    and ordered as the release does (`features`, `endpoint_order`). Flags no served operation
    provides are false."""
    served = list(operations(routes))
    provided = {feature for _, _, op in served for feature in op.features}
    flags: dict[str, Any] = {name: (_value(value) if name in provided else False) for name, value in features}
    flags["cors"] = cors  # in its place when the release lists it (0.21.2), else last
    advertised = sorted((entry for entry in served if entry[2].capability), key=_rank(endpoint_order))
    endpoints = {op.capability: {"method": method, "path": route.template} for route, method, op in advertised}
    return {
        "object": "hermes.api_server.capabilities",
        "platform": PLATFORM,
        "model": model,
        "auth": {"type": "bearer", "required": key_required},
        "runtime": RUNTIME,
        "features": flags,
        "endpoints": endpoints,
    }


async def capabilities(request: Request, ctx: AppContext) -> Response:
    """GET /v1/capabilities: what this instance serves, in upstream's shape."""
    settings = ctx.settings
    body = capabilities_body(
        ctx.routes, model=settings.model_name,
        key_required=bool(settings.api_key), cors=bool(settings.cors_origins), features=ctx.features,
        endpoint_order=ctx.endpoint_order,
    )
    idempotency = body["features"].get("runs_idempotency")
    if isinstance(idempotency, dict):  # false when runs_idempotency.db could not be opened
        idempotency["durable"] = ctx.runs.keys.durable
    return HermesJSONResponse(body)


async def openapi(request: Request, ctx: AppContext) -> Response:
    """GET /openapi.json: the OpenAPI 3.1 document of the routes served (no key needed)."""
    return HermesJSONResponse(build_document(ctx.routes, ctx.api_components))


def routes() -> list[Route]:
    """Liveness, readiness and discovery: what clients probe before the session routes."""
    return [
        Route(route_ids.HEALTH, "/health", {
            "GET": Method(health, Operation(
                summary="Liveness", responses={200: "Health"}, capability="health", security=None))}),
        Route(route_ids.V1_HEALTH, "/v1/health", {
            "GET": Method(health, Operation(
                summary="Liveness (alias)", description="The same answer as `GET /health`.",
                responses={200: "Health"}, security=None))}),
        Route(route_ids.HEALTH_DETAILED, "/health/detailed", {
            "GET": Method(health_detailed, Operation(
                summary="Readiness",
                description="Readiness checks (state.db, disk, model …) and runtime counters, as upstream reports its "
                            "gateway; `status` is `degraded` when a check is.",
                responses={200: "HealthDetailed", **AUTH_ERRORS}, capability="health_detailed"))}),
        Route(route_ids.MODELS, "/v1/models", {
            "GET": Method(models, Operation(
                summary="List models", responses={200: "ModelList", **AUTH_ERRORS}, capability="models"))}),
        Route(route_ids.CAPABILITIES, "/v1/capabilities", {
            "GET": Method(capabilities, Operation(
                summary="Capabilities",
                description="What this server serves: upstream's feature flags and endpoints, derived from the routes "
                            "served (a flag no served route provides is false).",
                responses={200: "Capabilities", **AUTH_ERRORS}))}),
        Route(route_ids.OPENAPI, "/openapi.json", {
            "GET": Method(openapi, Operation(
                summary="OpenAPI document",
                description="This document: exactly the routes this instance serves, as the release it answers as "
                            "(`--hermes-version`) serves them. docs/api.md is generated from it.",
                responses={200: "OpenAPIDocument"}, security=None))}),
    ]


def family() -> Family:
    """Health and discovery as a unit of the app, with the OpenAPI components their routes name."""
    return Family("discovery", routes(), components=COMPONENTS)
