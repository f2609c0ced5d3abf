"""0.20.4's `runtime` block on session chat: where the turn was routed, on the `/chat`
answer and on the stream's `run.started`, `assistant.completed` and `run.completed`; and a body's
`require_model_lock`, refused (400 `missing_model`, 409 `model_lock_unavailable`) when the named model
is not one this server routes to (domain/runtime.py)."""

from __future__ import annotations

from dataclasses import replace

from hermes_server.config import Settings
from hermes_server.context import Behaviour
from hermes_server.domain import route_ids
from hermes_server.domain.runtime import checked_runtime
from hermes_server.http.routing import Amendment
from hermes_server.openapi.build import extended, schema_ref
from hermes_server.openapi.chat_schemas import RESPONSES as CHAT_RESPONSES
from hermes_server.openapi.chat_schemas import SCHEMAS as CHAT_SCHEMAS
from hermes_server.openapi.common import text
from hermes_server.units.unit import Unit


def _reported(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, turn_runtime=checked_runtime)


_TEXT_OR_NULL = {"type": ["string", "null"]}

UNIT = Unit(
    name="chat_runtime",
    behaviour=_reported,
    amendments=tuple(Amendment(route, "POST", responses={409: "ModelLockUnavailable"})
                     for route in (route_ids.SESSION_CHAT, route_ids.SESSION_CHAT_STREAM)),
    components={
        "schemas": {
            "Runtime": {
                "type": "object", "required": ["provider", "model", "route_source"], "properties": {
                    "provider": {"type": "string"}, "model": {"type": "string"},
                    "route_source": {"enum": ["global", "session_model_lock"]},
                    "requested": {"type": "object", "properties": {"provider": _TEXT_OR_NULL,
                                                                   "model": _TEXT_OR_NULL}},
                    "model_lock": {"const": "confirmed"},
                },
                "description": "Where the turn was routed: the configured agent (`global`), or the session's model "
                               "lock.",
            },
            "ChatCompletion": extended(CHAT_SCHEMAS["ChatCompletion"], {"runtime": schema_ref("Runtime")}),
            "ChatRequest": extended(CHAT_SCHEMAS["ChatRequest"], {
                "model": text("Reported under `runtime.requested` (`provider::model` names both); the turn still "
                              "runs on the server's agent."),
                "model_id": text("Read as `model` when `model` is not non-empty text."),
                "provider": text("Reported under `runtime.requested`."),
                "provider_id": text("Read as `provider` when `provider` is not non-empty text."),
                "require_model_lock": {"type": "boolean", "description": (
                    "true: refuse the turn unless the named model is one this server routes to (409 "
                    "`model_lock_unavailable`; 400 `missing_model` when none is named or a name is not text). The "
                    "text `1`, `true`, `yes` or `on` counts too.")},
            }, required=False),
        },
        "responses": {
            "ChatBadRequest": {**CHAT_RESPONSES["ChatBadRequest"], "description": CHAT_RESPONSES["ChatBadRequest"][
                "description"] + " Or `require_model_lock` with no model named, or a name that is not text "
                                 "(`missing_model`)."},
            "ChatCompletion": {**CHAT_RESPONSES["ChatCompletion"], "description": "The assistant's reply for one turn, "
                               "and where it was routed (`runtime`)."},
            "ChatStream": {**CHAT_RESPONSES["ChatStream"], "description": "Server-sent events: run.started, "
                           "message.started, deltas, completion, done; run.started, assistant.completed and "
                           "run.completed carry the turn's `runtime` block."},
        },
    },
)
