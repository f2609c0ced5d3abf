"""What a newer profile's additions change in the OpenAPI document of routes 0.19.0 already serves.

A route a profile adds brings its own operation and components (routes/models.py `ADDED`). An
addition that changes an existing route, such as message paging or the chat `runtime` block,
changes its operation here instead: more query parameters, more answers (`AMENDED`), and
components that replace 0.19.0's under the same name (`COMPONENTS`: `MessageList` gains
`pagination`, `ChatCompletion` gains `runtime`). Both are data chosen once when the app is
built, so a profile without the addition, 0.19.0 above all, gets its document unchanged, byte
for byte. The behaviour and its sources are in docs/versions.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hermes_server.domain.paging import MAX_LIMIT, ORDERS
from hermes_server.domain.profiles import Addition, Profile
from hermes_server.http.routing import Method, Route
from hermes_server.openapi.models_schemas import MODEL_LOCK_COMPONENTS
from hermes_server.openapi.schemas import RESPONSES, SCHEMAS, ref


@dataclass(frozen=True)
class Amendment:
    """More query parameters and answers for one method of one route (by the route's name)."""

    route: str
    method: str
    query: tuple[str, ...] = ()
    responses: Mapping[int, str] = field(default_factory=dict)


def _json(description: str, schema: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref("schemas", schema)}}}


def _with(schema: str, properties: Mapping[str, Any], *, required: bool = True) -> dict[str, Any]:
    """0.19.0's schema `schema` with more properties (required too, when every answer has them)."""
    base = SCHEMAS[schema]
    extended = {**base, "properties": {**base["properties"], **properties}}
    if required:
        extended["required"] = [*base["required"], *properties]
    return extended


_TEXT_OR_NULL = {"type": ["string", "null"]}
_COUNT = {"type": "integer", "minimum": 0}

_PAGING: dict[str, dict[str, Any]] = {
    "parameters": {
        "message_limit": {"name": "limit", "in": "query", "schema": {"type": "string"}, "description": (
            f"Messages in the page; {MAX_LIMIT} when omitted, never more than {MAX_LIMIT}. A non-negative "
            "integer as Python's int() reads it; anything else is a 400 `invalid_pagination`.")},
        "message_offset": {"name": "offset", "in": "query", "schema": {"type": "string"}, "description": (
            "Messages to skip (with `latest`, counted back from the newest); default 0; a non-negative integer.")},
        "message_order": {"name": "order", "in": "query", "schema": {"type": "string"}, "description": (
            f"One of {', '.join(ORDERS)} (any case); `latest` when `limit` is omitted, else `oldest`. "
            "The page is chronological either way.")},
    },
    "schemas": {
        "MessageList": _with("MessageList", {"pagination": {
            "type": "object", "additionalProperties": False, "required": ["limit", "offset", "order", "returned"],
            "properties": {"limit": _COUNT, "offset": _COUNT, "order": {"enum": list(ORDERS)}, "returned": _COUNT},
        }}),
    },
    "responses": {
        "MessageList": _json("One page of the resolved transcript's active messages, and how it was cut.",
                             "MessageList"),
        "InvalidPagination": _json("`limit` or `offset` is not a non-negative integer, or `order` is not "
                                   "oldest or latest (`invalid_pagination`).", "Error"),
    },
}

_RUNTIME = {
    "type": "object", "required": ["provider", "model", "route_source"], "properties": {
        "provider": {"type": "string"}, "model": {"type": "string"},
        "route_source": {"enum": ["global", "session_model_lock"]},
        "requested": {"type": "object", "properties": {"provider": _TEXT_OR_NULL, "model": _TEXT_OR_NULL}},
        "model_lock": {"const": "confirmed"},
    },
    "description": "Where the turn was routed: the configured agent (`global`), or the session's model lock.",
}

_RUNTIME_COMPONENTS: dict[str, dict[str, Any]] = {
    "schemas": {
        "Runtime": _RUNTIME,
        "ChatCompletion": _with("ChatCompletion", {"runtime": ref("schemas", "Runtime")}),
        "ChatRequest": _with("ChatRequest", {
            "model": {"description": "Reported under `runtime.requested`; `provider::model` names both."},
            "model_id": {"description": "Alias of `model`."},
            "provider": {}, "provider_id": {"description": "Alias of `provider`."},
            "require_model_lock": {"description": "true (or 1/true/yes/on): refuse the turn unless the named "
                                                  "model is one this server routes to."},
        }, required=False),
    },
    "responses": {
        "ChatCompletion": {**RESPONSES["ChatCompletion"], "description": "The assistant's reply for one turn, "
                           "and where it was routed (`runtime`)."},
        "ChatStream": {**RESPONSES["ChatStream"], "description": "Server-sent events: run.started, "
                       "message.started, deltas, completion, done; run.started, assistant.completed and "
                       "run.completed carry the turn's `runtime` block."},
        "ModelLockUnavailable": MODEL_LOCK_COMPONENTS["responses"]["ModelLockUnavailable"],
    },
}

_GATEWAY_AUTH: dict[str, dict[str, Any]] = {
    "responses": {
        "Unauthorized": _json("Missing or wrong bearer key: type `gateway_auth_error`, code "
                              "`gateway_auth_failed` (envelope without `param`).", "Error"),
    },
}

_STOP_SETTLED: dict[str, dict[str, Any]] = {
    "schemas": {
        "RunStopping": {"type": "object", "required": ["run_id", "status"], "properties": {
            "run_id": {"type": "string"}, "status": {"type": "string"}},
            "description": "`stopping` for a live run; a finished run's whole status object, as GET answers it."},
    },
    "responses": {
        "RunStopping": _json("The run is being stopped (`stopping`), or had finished: its status.", "RunStopping"),
        "RunNotActive": _json("The run is known but not live in this process (`run_not_active`).", "Error"),
    },
}

_CHAT = ("session_chat", "session_chat_stream")

AMENDED: dict[Addition, tuple[Amendment, ...]] = {
    Addition.MESSAGE_PAGING: (Amendment("session_messages", "GET", ("message_limit", "message_offset",
                                                                     "message_order"), {400: "InvalidPagination"}),),
    Addition.CHAT_RUNTIME: tuple(Amendment(route, "POST", responses={409: "ModelLockUnavailable"}) for route in _CHAT),
    Addition.RUN_STOP_SETTLED: (Amendment("run_stop", "POST", responses={409: "RunNotActive"}),),
}

COMPONENTS: dict[Addition, dict[str, dict[str, Any]]] = {
    Addition.MESSAGE_PAGING: _PAGING,
    Addition.CHAT_RUNTIME: _RUNTIME_COMPONENTS,
    Addition.GATEWAY_AUTH: _GATEWAY_AUTH,
    Addition.RUN_STOP_SETTLED: _STOP_SETTLED,
}


def _amend(route: Route, amendments: Iterable[Amendment]) -> Route:
    methods = dict(route.methods)
    for change in amendments:
        method = methods[change.method]
        op = method.operation
        methods[change.method] = Method(method.endpoint, replace(
            op, query=(*op.query, *change.query), responses={**op.responses, **change.responses}))
    return Route(route.name, route.template, methods, route.errors)


def amended(routes: list[Route], profile: Profile) -> list[Route]:
    """`routes` with the operations of the profile's additions amended (the same list for 0.19.0)."""
    changes: dict[str, list[Amendment]] = {}
    for addition, amendments in AMENDED.items():
        if addition in profile:
            for change in amendments:
                changes.setdefault(change.route, []).append(change)
    return [_amend(route, changes[route.name]) if route.name in changes else route for route in routes]


def components(profile: Profile) -> dict[str, dict[str, Any]]:
    """The components the profile's additions replace or add, by section."""
    merged: dict[str, dict[str, Any]] = {}
    for addition, parts in COMPONENTS.items():
        if addition in profile:
            for section, entries in parts.items():
                merged.setdefault(section, {}).update(entries)
    return merged
