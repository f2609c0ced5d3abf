"""What a newer profile's additions change in the OpenAPI document of routes 0.19.0 already serves.

A route a profile adds brings its own operation and components (routes/models.py `ADDED`). An
addition that changes an existing route changes its operation here instead: more query and
header parameters, more or other answers (`AMENDED`: message paging's 400, PATCH's
`invalid_session_field`, steer's own 409, submit's `Idempotency-Key` and 409
`idempotency_key_conflict`), and components that replace 0.19.0's under the same name
(`COMPONENTS`: `MessageList` gains `pagination`, `ChatCompletion` `runtime`, `Session` the
flags, `Capabilities` the `runs_idempotency` object). Submit's key is a component of its own,
`RunIdempotencyKey`, since chat completions' `Idempotency-Key` keeps 0.19.0's rules. Both tables
are data chosen once when the app is built, so a profile without the addition, 0.19.0 above
all, gets its document unchanged, byte for byte. The behaviour and its sources are in
docs/versions.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hermes_server.domain.paging import MAX_LIMIT, ORDERS
from hermes_server.domain.profiles import Addition, Profile
from hermes_server.domain.run_keys import MAX_KEY_LENGTH
from hermes_server.domain.session_flags import SHOWN_FLAGS
from hermes_server.http.routing import Method, Route
from hermes_server.openapi.models_schemas import MODEL_LOCK_COMPONENTS
from hermes_server.openapi.schemas import PARAMETERS, RESPONSES, SCHEMAS, ref


@dataclass(frozen=True)
class Amendment:
    """More query and header parameters, and answers, for one method of one route (by the route's
    name); an answer named under a status the route already has replaces it."""

    route: str
    method: str
    query: tuple[str, ...] = ()
    responses: Mapping[int, str] = field(default_factory=dict)
    headers: tuple[str, ...] = ()


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

_BOOLEAN = {"type": "boolean"}


def _placed(keys: Iterable[str], new: Iterable[str], before: str) -> list[str]:
    listed = list(keys)
    at = listed.index(before)
    return [*listed[:at], *new, *listed[at:]]


def _flagged(schema: str) -> dict[str, Any]:
    """0.19.0's session schema `schema` with the flags, required, where the answers put them."""
    base = SCHEMAS[schema]
    keys = _placed(base["properties"], SHOWN_FLAGS, "has_system_prompt")
    return {**base, "properties": {key: base["properties"].get(key, _BOOLEAN) for key in keys},
            "required": _placed(base["required"], SHOWN_FLAGS, "has_system_prompt")}


_FLAGS: dict[str, dict[str, Any]] = {
    "schemas": {
        "Session": _flagged("Session"),
        "SessionListItem": _flagged("SessionListItem"),
        "PatchSession": _with("PatchSession", {
            **{flag: {**_BOOLEAN, "description": "Set on every session of the compression lineage."}
               for flag in SHOWN_FLAGS},
            "unread": {**_BOOLEAN, "description": "true: unread (the read watermark cleared); false: read now. "
                                                  "Set on every session of the compression lineage."},
        }, required=False),
    },
    "responses": {
        "SessionList": _json("One page of sessions, archived and hidden ones left out; pinned sessions ranked "
                             "past the page follow it, in activity order, and `has_more` counts only the "
                             "unpinned rows against `limit`.", "SessionList"),
        "InvalidSessionPatch": _json("Invalid JSON, a body that is not an object, a field PATCH does not take "
                                     "(`unsupported_session_field`), or a flag that is not a JSON boolean "
                                     "(`invalid_session_field`, \"'pinned' must be a boolean\").", "Error"),
    },
}

# 0.21.2 steers too (RUN_STEER comes first in COMPONENTS): its status is the steered one, which
# may also read `interrupted` (a kept run whose process is gone).
_STEERED_STATUS = _with("RunStatus", {"pending_steer": {
    "type": "string", "description": "Steer text the agent never received (newline-joined)."}}, required=False)
_KEPT_STATUS = {**_STEERED_STATUS, "properties": {
    **_STEERED_STATUS["properties"],
    "status": {"enum": [*SCHEMAS["RunStatus"]["properties"]["status"]["enum"], "interrupted"]}}}

_STEER: dict[str, dict[str, Any]] = {
    "schemas": {"RunStatus": _STEERED_STATUS},
    "responses": {
        "InvalidSteerInput": _json("Invalid JSON, a body that is not an object, or no non-blank text in `input`, "
                                   "`message` or `text` (`invalid_steer_input`).", "Error"),
        "SteerRefused": _json("The run is not running (`run_not_accepting_steer`), or it ended while the text "
                              "was read (`steer_not_accepted`).", "Error"),
    },
}

_STREAM_RUNS: dict[str, dict[str, Any]] = {
    "parameters": {
        "run_id": {**PARAMETERS["run_id"], "description": "A run of POST /v1/runs, or a session stream's (the "
                                                          "`run_id` of its `run.started`): its status, stop and "
                                                          "steer reach either."},
    },
    "responses": {
        "RunStatus": {**RESPONSES["RunStatus"], "description": "The status of a submitted run or of a session "
                      "stream's; keys appear in the order they were first set."},
    },
}

_IDEMPOTENCY: dict[str, dict[str, Any]] = {
    "parameters": {
        "RunIdempotencyKey": {"name": "Idempotency-Key", "in": "header", "description": (
            f"At most {MAX_KEY_LENGTH} visible ASCII characters (empty: no key). A retry with the same body "
            "and X-Hermes-Session-Key replays the run it admitted, for a day after that run settles and "
            "across restarts; another request with it is a 409."),
            "schema": {"type": "string", "maxLength": MAX_KEY_LENGTH, "pattern": "^[!-~]*$"}},
    },
    "schemas": {
        "RunStatus": _KEPT_STATUS,
        # 0.21.2's two object-valued flags, described together: the one release with either has
        # both (`browser_extension_control` comes with its unserved routes, routes/unserved.py).
        "Capabilities": _with("Capabilities", {"features": {
            **SCHEMAS["Capabilities"]["properties"]["features"],
            "required": ["runs_idempotency", "browser_extension_control"],
            "properties": {"runs_idempotency": {
                "type": "object", "additionalProperties": False,
                "required": ["supported", "durable", "retention_seconds"],
                "properties": {"supported": _BOOLEAN, "durable": _BOOLEAN, "retention_seconds": _COUNT},
                "description": "`durable`: whether runs_idempotency.db could be opened."},
                "browser_extension_control": {
                    "type": "object", "required": ["enabled", "protocol_version"],
                    "properties": {"enabled": {"const": False}, "protocol_version": {"const": 1}},
                    "description": "0.21.2's browser control, as upstream shows it with no extension "
                                   "configured: not enabled (its routes answer 501 here)."}}}}, required=False),
    },
    "responses": {
        "RunStarted": {**_json("The run is registered and its turn started (`replayed` false), or, for a "
                               "replayed Idempotency-Key, the run it admitted with its status now.", "RunStarted"),
                       "headers": {"Idempotency-Replayed": {"description": "`true` on a replay, else absent.",
                                                            "schema": {"const": "true"}}}},
        "RunBadRequest": _json("Invalid JSON, a body that is not an object, an invalid field, or an "
                               "Idempotency-Key that is not 1-255 visible ASCII characters "
                               "(`invalid_idempotency_key`).", "Error"),
        "IdempotencyKeyConflict": _json("The Idempotency-Key was used with another body or X-Hermes-Session-Key "
                                        "(`idempotency_key_conflict`).", "Error"),
    },
}

_CHAT = ("session_chat", "session_chat_stream")

AMENDED: dict[Addition, tuple[Amendment, ...]] = {
    Addition.MESSAGE_PAGING: (Amendment("session_messages", "GET", ("message_limit", "message_offset",
                                                                     "message_order"), {400: "InvalidPagination"}),),
    Addition.CHAT_RUNTIME: tuple(Amendment(route, "POST", responses={409: "ModelLockUnavailable"}) for route in _CHAT),
    Addition.RUN_STOP_SETTLED: (Amendment("run_stop", "POST", responses={409: "RunNotActive"}),),
    Addition.SESSION_FLAGS: (Amendment("session", "PATCH", responses={400: "InvalidSessionPatch"}),),
    Addition.RUN_STEER: (Amendment("run_steer", "POST", responses={400: "InvalidSteerInput", 409: "SteerRefused"}),),
    Addition.RUN_IDEMPOTENCY: (Amendment("runs", "POST", headers=("RunIdempotencyKey",), responses={
        400: "RunBadRequest", 409: "IdempotencyKeyConflict"}),),
}

COMPONENTS: dict[Addition, dict[str, dict[str, Any]]] = {
    Addition.MESSAGE_PAGING: _PAGING,
    Addition.CHAT_RUNTIME: _RUNTIME_COMPONENTS,
    Addition.GATEWAY_AUTH: _GATEWAY_AUTH,
    Addition.RUN_STOP_SETTLED: _STOP_SETTLED,
    Addition.SESSION_FLAGS: _FLAGS,
    Addition.RUN_STEER: _STEER,
    Addition.SESSION_STREAM_RUNS: _STREAM_RUNS,
    Addition.RUN_IDEMPOTENCY: _IDEMPOTENCY,
}


def _amend(route: Route, amendments: Iterable[Amendment]) -> Route:
    methods = dict(route.methods)
    for change in amendments:
        method = methods[change.method]
        op = method.operation
        methods[change.method] = Method(method.endpoint, replace(
            op, query=(*op.query, *change.query), headers=(*op.headers, *change.headers),
            responses={**op.responses, **change.responses}))
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
