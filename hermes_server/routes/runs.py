"""Structured runs: POST /v1/runs, GET /v1/runs/{id}, its events (SSE), stop and approval.

A run is one agent turn started in the background: the submit answers 202 at once,
the client polls the status or follows the events, and may stop the run or answer a
tool's approval request while it is live. What a run keeps and for how long is in
`chat/runs.py`; these handlers check requests in upstream's order. What newer releases
change here (steer, 0.21's stop and its durable Idempotency-Key) is each a unit of
hermes_server/units/, built on the helpers below.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import crashing_non_object, invalid_field, invalid_run_json
from hermes_server.api.session_key import session_key
from hermes_server.chat.responses import continuation
from hermes_server.chat.run_task import RunSpec, run_in_background
from hermes_server.chat.runs import LiveRun
from hermes_server.chat.slots import Admission
from hermes_server.chat.stream import StreamEvent
from hermes_server.context import AppContext
from hermes_server.domain import route_ids, run_keys
from hermes_server.domain.openai_messages import request_bool
from hermes_server.domain.response_history import model_turn
from hermes_server.domain.run_input import APPROVAL_CHOICES, CHOICE_ALIASES, RunInput, parse_run_input
from hermes_server.domain.titles import has_lone_surrogate
from hermes_server.families import Family
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.http.sse import drain, frame
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.openapi.runs_schemas import COMPONENTS, RUN_EVENTS, START_RUN
from hermes_server.routes.common import stream_answer

STREAM_CLOSED_FRAME = b": stream closed\n\n"
# A subscriber may come a moment before its run is registered: the events route waits this long.
SUBSCRIBE_POLLS = 20
SUBSCRIBE_POLL_SECONDS = 0.05


def run_not_found(run_id: str) -> ApiError:
    return ApiError(404, f"Run not found: {run_id}", "run_not_found")


async def submit_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs: the run cap (after the session key, before the body), validate, register the
    run, start its turn, answer 202."""
    key = session_key(request, ctx.settings.api_key)
    with ctx.slots.admit() as admission:
        body = await read_json_object(request, crashing_non_object, invalid_run_json)
        prepared = await prepare(ctx, body)
        run_id, live = register(ctx, prepared)
        spawn(ctx, prepared, run_id, live, key, admission)
    return accepted({"run_id": run_id, "status": "started"}, key)


def accepted(answer: dict[str, Any], key: str | None, *, replayed: bool = False) -> Response:
    """The 202 of a submit, with the echoed session key (and `Idempotency-Replayed` on a replay)."""
    headers = {"Idempotency-Replayed": "true"} if replayed else {}
    if key:
        headers["X-Hermes-Session-Key"] = key
    return HermesJSONResponse(answer, 202, headers=headers or None)


@dataclass(frozen=True)
class Prepared:
    """A validated submit: its input and the history the model is given."""

    parsed: RunInput
    session_id: Any
    history: list[dict[str, Any]]
    instructions: Any
    prompt: Any


async def prepare(ctx: AppContext, body: dict[str, Any]) -> Prepared:
    """The body's input, then the history from `previous_response_id` when the body gives none."""
    parsed = parse_run_input(body, ctx.settings.model_name)
    previous = parsed.previous_response_id
    if not parsed.history and isinstance(previous, str) and has_lone_surrogate(previous):  # 0.19.0 fails looking it up
        raise invalid_field("previous_response_id", "Invalid value for 'previous_response_id': text must be valid Unicode")
    # An unknown previous_response_id is ignored, as upstream does.
    continued = await continuation(ctx.response_store, previous, parsed.history, parsed.instructions, missing=None)
    history, prompt = model_turn(continued.history or parsed.earlier, parsed.user_message)
    return Prepared(parsed, parsed.session_id or continued.session_id, history, continued.instructions, prompt)


def register(ctx: AppContext, prepared: Prepared) -> tuple[str, LiveRun]:
    """A new run id and its registered (queued) run."""
    run_id = f"run_{ctx.ids.hex(32)}"
    return run_id, ctx.runs.register(run_id, prepared.session_id or run_id, prepared.parsed.model)


def spawn(ctx: AppContext, prepared: Prepared, run_id: str, live: LiveRun, key: str | None,
          admission: Admission) -> None:
    """Start the registered run's turn (the admission ends as it is handed to its task)."""
    spec = RunSpec(run_id, ctx.runs.statuses[run_id]["session_id"], prepared.parsed.user_message, prepared.history,
                   prepared.instructions, key, prepared.prompt)
    admission.release()
    live.task = ctx.turns.spawn(run_in_background(ctx, ctx.runs, spec, live))


async def run_status(request: Request, ctx: AppContext) -> Response:
    """GET /v1/runs/{run_id}: the pollable status."""
    run_id = request.path_params["run_id"]
    ctx.runs.sweep()
    status = await status_of(ctx, run_id)
    if status is None:
        raise run_not_found(run_id)
    return HermesJSONResponse(status)


async def status_of(ctx: AppContext, run_id: str) -> dict[str, Any] | None:
    """The run's status: in memory, or (0.21) from its record, as a restart left it."""
    return await ctx.runs.hydrate(run_keys.scope(ctx.settings.api_key, ctx.settings.profile), run_id)


def _event_frames(ctx: AppContext, run_id: str, queue: asyncio.Queue[Any]) -> AsyncIterator[bytes]:
    """The run's queued events as unnamed `data:` events, then `: stream closed`; the queue goes
    with the stream, however it ends."""
    def gone() -> None:
        ctx.runs.subscribed.discard(run_id)
        if ctx.runs.streams.get(run_id) is queue:
            ctx.runs.drop_stream(run_id)

    return drain(queue, ctx.settings.keepalive_seconds, _run_frame, last=STREAM_CLOSED_FRAME, done=gone)


def _run_frame(event: dict[str, Any]) -> bytes:
    return frame(StreamEvent(event), ascii_only=True)


async def run_events(request: Request, ctx: AppContext) -> Response:
    """GET /v1/runs/{run_id}/events: the run's events as server-sent events."""
    run_id = request.path_params["run_id"]
    for _ in range(SUBSCRIBE_POLLS):
        if run_id in ctx.runs.streams:
            break
        await asyncio.sleep(SUBSCRIBE_POLL_SECONDS)
    else:
        raise run_not_found(run_id)
    ctx.runs.subscribed.add(run_id)
    return stream_answer(ctx, _event_frames(ctx, run_id, ctx.runs.streams[run_id]), {}, cors=False)


async def stop_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs/{run_id}/stop: stop a live run; any other is unknown here (0.19.0)."""
    run_id = request.path_params["run_id"]
    if ctx.runs.request_stop(run_id):
        return stopping(run_id)
    raise run_not_found(run_id)


def stopping(run_id: str) -> Response:
    """The answer to the stop of a live run (it ends `cancelled`)."""
    return HermesJSONResponse({"run_id": run_id, "status": "stopping"})


def _choice(body: dict[str, Any]) -> str:
    raw = str(body.get("choice", "")).strip().lower()
    choice = CHOICE_ALIASES.get(raw, raw)
    if choice not in APPROVAL_CHOICES:
        raise ApiError(400, "Invalid approval choice; expected one of: once, session, always, deny",
                       "invalid_approval_choice")
    return choice


async def answer_approval(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs/{run_id}/approval: answer the run's oldest pending approval (or all)."""
    run_id = request.path_params["run_id"]
    if await status_of(ctx, run_id) is None:
        raise run_not_found(run_id)
    body = await read_json_object(request, crashing_non_object, invalid_run_json)
    choice = _choice(body)
    every = request_bool(body.get("all")) or request_bool(body.get("resolve_all"))
    resolved = ctx.runs.respond(run_id, choice, every)
    if resolved is None:
        raise ApiError(409, f"Run has no active approval session: {run_id}", "approval_not_active")
    if resolved == 0:
        raise ApiError(409, f"Run has no pending approval: {run_id}", "approval_not_pending")
    return HermesJSONResponse({"object": "hermes.run.approval_response", "run_id": run_id,
                               "choice": choice, "resolved": resolved})


def routes() -> list[Route]:
    """The five run routes and what they promise."""
    return [
        Route(route_ids.RUNS, "/v1/runs", {
            "POST": Method(submit_run, Operation(
                summary="Start a run", description=START_RUN,
                responses={202: "RunStarted", 400: "BadRequest", 403: "Forbidden", 413: "PayloadTooLarge",
                           429: "TooManyRuns", **AUTH_ERRORS},
                capability="runs", features=("run_submission",), body="RunRequest",
                headers=("X-Hermes-Session-Key",), effect=Effect.UNSAFE)),
        }),
        Route(route_ids.RUN_STATUS, "/v1/runs/{run_id}", {
            "GET": Method(run_status, Operation(
                summary="Get a run", description="The run's status, to poll until it is `completed`, `failed` or "
                                                  "`cancelled`.",
                responses={200: "RunStatus", 404: "NotFound", **AUTH_ERRORS},
                capability="run_status", features=("run_status",))),
        }),
        Route(route_ids.RUN_EVENTS, "/v1/runs/{run_id}/events", {
            "GET": Method(run_events, Operation(
                summary="Follow a run's events", description=RUN_EVENTS,
                responses={200: "RunEvents", 404: "NotFound", **AUTH_ERRORS},
                capability="run_events", features=("run_events_sse", "tool_progress_events", "approval_events"),
                streams=True)),
        }),
        Route(route_ids.RUN_APPROVAL, "/v1/runs/{run_id}/approval", {
            "POST": Method(answer_approval, Operation(
                summary="Answer a run's approval",
                description="Answers the oldest approval the run's agent is waiting for (or, with `all`, every one).",
                responses={200: "RunApprovalResponse", 400: "BadRequest", 404: "NotFound", 409: "Conflict",
                           413: "PayloadTooLarge", **AUTH_ERRORS},
                capability="run_approval", features=("run_approval_response",), body="RunApprovalRequest")),
        }),
        Route(route_ids.RUN_STOP, "/v1/runs/{run_id}/stop", {
            "POST": Method(stop_run, Operation(
                summary="Stop a run", description="Stops a live run: it ends `cancelled`. A run that is not live is "
                                                   "404 here (0.19.0).",
                responses={200: "RunStopping", 404: "NotFound", **AUTH_ERRORS},
                capability="run_stop", features=("run_stop",))),
        }),
    ]


def family() -> Family:
    """The structured runs as a unit of the app, with the OpenAPI components their routes name."""
    return Family("runs", routes(), components=COMPONENTS)
