"""0.20's steer (https://github.com/NousResearch/hermes-agent/pull/85226):
`POST /v1/runs/{run_id}/steer` gives a running agent text to read before its
next step, queues `run.steered`, and what the agent never took rides on `run.completed` and the
status as `pending_steer` (chat/runs.py keeps it)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.openai_messages import flatten_text
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.build import error_answer, extended, json_answer, json_object, schema_ref, with_example
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.openapi.runs_schemas import SCHEMAS as RUN_SCHEMAS
from hermes_server.routes.runs import run_not_found, status_of
from hermes_server.units.unit import Unit


async def steer_run(request: Request, ctx: AppContext) -> Response:
    """Checked in upstream's order: the run, that it is running, then the body. The agent takes the
    text before its next step; what it never took is `pending_steer` on `run.completed`
    (docs/differences.md)."""
    run_id = request.path_params["run_id"]
    if await status_of(ctx, run_id) is None:
        raise run_not_found(run_id)
    if not ctx.runs.accepting_steer(run_id):
        raise ApiError(409, f"Run is not currently accepting steer input: {run_id}", "run_not_accepting_steer")
    body = await read_json_object(request)
    raw = body.get("input") or body.get("message") or body.get("text") or ""
    text = flatten_text(raw).strip()
    if not text:
        raise ApiError(400, "Missing non-empty steer text; expected 'input', 'message', or 'text'.",
                       "invalid_steer_input")
    if not ctx.runs.steer(run_id, text):  # it ended while its body was read
        raise ApiError(409, f"Run did not accept steer text: {run_id}", "steer_not_accepted")
    return HermesJSONResponse({"object": "hermes.run.steer", "run_id": run_id, "accepted": True})


def _routes() -> list[Route]:
    return [Route(route_ids.RUN_STEER, "/v1/runs/{run_id}/steer", {
        "POST": Method(steer_run, Operation(
            summary="Steer a run",
            description="Gives the running agent text it reads before its next step; what it never took is "
                        "`pending_steer` on `run.completed` and the status.",
            responses={200: "RunSteer", 400: "InvalidSteerInput", 404: "NotFound", 409: "SteerRefused",
                       413: "PayloadTooLarge", **AUTH_ERRORS},
            capability="run_steer", features=("run_steer",), body="RunSteerRequest"))})]


# Steer text: a string, or text parts (their texts joined by newlines; other parts are dropped).
_STEER_TEXT: dict[str, Any] = {
    "anyOf": [{"type": "string"}, {"type": "array", "items": {"anyOf": [{"type": "string"}, schema_ref("TextPart")]}}],
    "description": "The text the agent reads before its next step: a string, or text parts (joined by newlines). "
                   "The first non-empty of `input`, `message`, `text` is read; blank: 400 `invalid_steer_input`.",
}

# The status a steered run reports.
_STEERED_STATUS: dict[str, Any] = extended(RUN_SCHEMAS["RunStatus"], {"pending_steer": {
    "type": "string", "description": "Steer text the agent never received (newline-joined)."}}, required=False)

UNIT = Unit(
    name="run_steer",
    routes=_routes,
    components={
        "schemas": {
            "RunStatus": _STEERED_STATUS,
            "RunSteerRequest": with_example({"input": "Also check the tests."}, json_object({
                "input": _STEER_TEXT, "message": {**_STEER_TEXT, "description": "Read when `input` is empty."},
                "text": {**_STEER_TEXT, "description": "Read when `input` and `message` are empty."},
            }, closed=False)),
            "RunSteer": {"type": "object", "required": ["object", "run_id", "accepted"],
                         "additionalProperties": False,
                         "properties": {"object": {"const": "hermes.run.steer"}, "run_id": {"type": "string"},
                                        "accepted": {"const": True}}},
        },
        "responses": {
            "RunSteer": json_answer("The running agent took the text; a `run.steered` event is queued.", "RunSteer"),
            "InvalidSteerInput": error_answer("Invalid JSON, a body that is not an object, or no non-blank text in "
                                              "`input`, `message` or `text` (`invalid_steer_input`)."),
            "SteerRefused": error_answer("The run is not running (`run_not_accepting_steer`), or it ended while the "
                                         "text was read (`steer_not_accepted`)."),
        },
    },
)
