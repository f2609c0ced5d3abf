"""Structured runs: POST /v1/runs, GET /v1/runs/{id}, its events (SSE), stop, approval and (0.20+) steer.

A run is one agent turn started in the background: the submit answers 202 at once,
the client polls the status or follows the events, and may stop the run or answer a
tool's approval request while it is live. What a run keeps and for how long is in
`chat/runs.py`; these handlers check requests in upstream's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import crashing_non_object, invalid_field
from hermes_server.api.session_key import session_key
from hermes_server.chat.runs import APPROVAL_CHOICES, LiveRun, RunSpec, run_in_background
from hermes_server.chat.slots import Admission
from hermes_server.context import AppContext
from hermes_server.domain import run_keys
from hermes_server.domain.openai_messages import flatten_text, request_bool
from hermes_server.domain.profiles import HERMES_0_19, Addition, Profile
from hermes_server.domain.response_history import model_turn
from hermes_server.domain.run_input import RunInput, parse_run_input
from hermes_server.domain.titles import has_lone_surrogate
from hermes_server.http.auth import raw_header
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.http.sse import KEEPALIVE_FRAME, data_frame, sse_response
from hermes_server.openapi.schemas import AUTH_ERRORS
from hermes_server.store.runs_idempotency import KeptRun, Owner

STREAM_CLOSED_FRAME = b": stream closed\n\n"
# A subscriber may come a moment before its run is registered: the events route waits this long.
SUBSCRIBE_POLLS = 20
SUBSCRIBE_POLL_SECONDS = 0.05
_CHOICE_ALIASES = {"approve": "once", "approved": "once", "allow": "once"}
# This process, as the owner its kept runs record (a restart is another owner).
OWNER = Owner.this_process()


def _invalid_json() -> ApiError:
    return ApiError(400, "Invalid JSON")


def run_not_found(run_id: str) -> ApiError:
    return ApiError(404, f"Run not found: {run_id}", "run_not_found")


async def submit_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs: validate, register the run, start its turn, answer 202. With 0.21.2's
    durable keys, the body is read before the cap, so a replay answers even on a full server."""
    key = session_key(request, ctx.settings.api_key)
    if ctx.runs.keys is None:
        with ctx.slots.admit() as admission:  # the run cap, after the session key, before the body
            body = await read_json_object(request, crashing_non_object, _invalid_json)
            prepared = await _prepare(ctx, body, request.scope)
            run_id, live = _register(ctx, prepared)
            _spawn(ctx, prepared, run_id, live, key, admission)
        return _accepted(ctx, run_id, "started", key, replayed=False)
    body = await read_json_object(request, crashing_non_object, _invalid_json)
    claim = _claim(request, ctx, body, key)
    prepared = await _prepare(ctx, body, request.scope)
    if claim is not None:
        outcome, record = await ctx.runs.keys.lookup(*claim, ctx.now())
        if record is not None:
            return await _replay_or_conflict(ctx, outcome, record, key, claim[0])
    with ctx.slots.admit() as admission:  # only a new run counts against the cap
        run_id, live = _register(ctx, prepared)
        if claim is not None:
            replay = await _reserve(ctx, run_id, claim, key)
            if replay is not None:
                return replay
        _spawn(ctx, prepared, run_id, live, key, admission)
    return _accepted(ctx, run_id, "started", key, replayed=False)


def _claim(request: Request, ctx: AppContext, body: Any, key: str | None) -> tuple[str, str, str] | None:
    """The (scope, key, fingerprint) an `Idempotency-Key` claims, None without one; 400 for a bad key."""
    raw = raw_header(request, b"idempotency-key")
    idempotency_key = raw.decode("utf-8", "surrogateescape").strip() if raw is not None else ""
    if not run_keys.valid_key(idempotency_key):
        raise ApiError(400, run_keys.INVALID_KEY_MESSAGE, "invalid_idempotency_key")
    if not idempotency_key:
        return None
    return run_keys.scope(ctx.settings.api_key), idempotency_key, run_keys.fingerprint(body, key)


async def _replay_or_conflict(ctx: AppContext, outcome: str, record: KeptRun, key: str | None,
                              scope: str) -> Response:
    """409 for a key reused with another request, else the 202 of the run it admitted, with that
    run's status now."""
    if outcome == "conflict":
        raise ApiError(409, run_keys.CONFLICT_MESSAGE, "idempotency_key_conflict")
    status = await ctx.runs.hydrate(scope, record.run_id) or record.status
    return _accepted(ctx, record.run_id, str(status.get("status", "queued")), key, replayed=True)


def _accepted(ctx: AppContext, run_id: str, status: str, key: str | None, *, replayed: bool) -> Response:
    """The 202: `replayed` in 0.21's answer, and its `Idempotency-Replayed` header on a replay."""
    answer: dict[str, Any] = {"run_id": run_id, "status": status}
    if Addition.RUN_SUBMIT_REPLAYED in ctx.profile:
        answer["replayed"] = replayed
    headers = {"Idempotency-Replayed": "true"} if replayed else {}
    if key:
        headers["X-Hermes-Session-Key"] = key
    return HermesJSONResponse(answer, 202, headers=headers or None)


@dataclass(frozen=True)
class _Prepared:
    """A validated submit: its input and the history the model is given."""

    parsed: RunInput
    session_id: Any
    history: list[dict[str, Any]]
    instructions: Any
    prompt: Any
    origin: Any


async def _prepare(ctx: AppContext, body: dict[str, Any], origin: Any) -> _Prepared:
    """The body's input, then the history from `previous_response_id` when the body gives none."""
    parsed = parse_run_input(body, ctx.settings.model_name)
    history, stored_session, instructions = parsed.history, None, parsed.instructions
    if not history and parsed.previous_response_id:
        previous = parsed.previous_response_id
        if isinstance(previous, str) and has_lone_surrogate(previous):  # 0.19.0 fails looking it up
            raise invalid_field("previous_response_id",
                                "Invalid value for 'previous_response_id': text must be valid Unicode")
        stored = await ctx.response_store.get(previous)
        if stored is not None:  # an unknown previous_response_id is ignored, as upstream does
            history = list(stored.get("conversation_history") or [])
            stored_session = stored.get("session_id")
            if instructions is None:
                instructions = stored.get("instructions")
    if not history:
        history = parsed.earlier
    history, prompt = model_turn(history, parsed.user_message)
    return _Prepared(parsed, parsed.session_id or stored_session, history, instructions, prompt, origin)


def _register(ctx: AppContext, prepared: _Prepared) -> tuple[str, LiveRun]:
    """A new run id and its registered (queued) run."""
    run_id = f"run_{ctx.ids.hex(32)}"
    return run_id, ctx.runs.register(run_id, prepared.session_id or run_id, prepared.parsed.model)


async def _reserve(ctx: AppContext, run_id: str, claim: tuple[str, str, str], key: str | None) -> Response | None:
    """Record the claimed key for `run_id`; None when it is this run's. A request that reserved it
    meanwhile wins, and this one, forgotten, answers as its replay (or 409)."""
    assert ctx.runs.keys is not None
    outcome, record = await ctx.runs.keys.reserve(*claim, run_id, dict(ctx.runs.statuses[run_id]), OWNER, ctx.now())
    if outcome == "created":
        ctx.runs.kept.add(run_id)
        return None
    ctx.runs.forget(run_id)
    return await _replay_or_conflict(ctx, outcome, record, key, claim[0])


def _spawn(ctx: AppContext, prepared: _Prepared, run_id: str, live: LiveRun, key: str | None,
           admission: Admission) -> None:
    """Start the registered run's turn (the admission ends as it is handed to its task)."""
    spec = RunSpec(run_id, ctx.runs.statuses[run_id]["session_id"], prepared.parsed.user_message, prepared.history,
                   prepared.instructions, key, prepared.origin, prepared.prompt)
    admission.release()
    live.task = ctx.turns.spawn(run_in_background(ctx, ctx.runs, spec, live))


async def run_status(request: Request, ctx: AppContext) -> Response:
    """GET /v1/runs/{run_id}: the pollable status."""
    run_id = request.path_params["run_id"]
    ctx.runs.sweep()
    status = await _status(ctx, run_id)
    if status is None:
        raise run_not_found(run_id)
    return HermesJSONResponse(status)


async def _status(ctx: AppContext, run_id: str) -> dict[str, Any] | None:
    """The run's status: in memory, or (0.21.2) from its record, as a restart left it."""
    return await ctx.runs.hydrate(run_keys.scope(ctx.settings.api_key), run_id)


async def _event_frames(ctx: AppContext, run_id: str, queue: asyncio.Queue[Any]) -> AsyncIterator[bytes]:
    """The run's queued events as `data:` frames, then `: stream closed`; the queue goes with the stream."""
    keepalive = ctx.settings.keepalive_seconds
    try:
        while True:
            try:
                event = await asyncio.wait_for(queue.get(), keepalive)
            except TimeoutError:
                yield KEEPALIVE_FRAME
                continue
            if event is None:
                yield STREAM_CLOSED_FRAME
                return
            yield data_frame(event)
    finally:
        ctx.runs.subscribed.discard(run_id)
        if ctx.runs.streams.get(run_id) is queue:
            ctx.runs.drop_stream(run_id)


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
    frames = _event_frames(ctx, run_id, ctx.runs.streams[run_id])
    return sse_response(ctx.hooks.stream(request.scope, frames), {}, cors=False)


async def stop_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs/{run_id}/stop: stop a live run. In 0.19.0 a finished one is unknown here;
    0.21 answers a settled run (an `interrupted` one included) with its status, and a run not
    live in this process (another server on this home runs it) with 409."""
    run_id = request.path_params["run_id"]
    if ctx.runs.request_stop(run_id):
        return HermesJSONResponse({"run_id": run_id, "status": "stopping"})
    status = await _status(ctx, run_id)
    if status is None or Addition.RUN_STOP_SETTLED not in ctx.profile:
        raise run_not_found(run_id)
    if status.get("status") in run_keys.SETTLED:
        return HermesJSONResponse(status)
    raise ApiError(409, f"Run is not active in this gateway process: {run_id}", "run_not_active")


def _choice(body: dict[str, Any]) -> str:
    raw = str(body.get("choice", "")).strip().lower()
    choice = _CHOICE_ALIASES.get(raw, raw)
    if choice not in APPROVAL_CHOICES:
        raise ApiError(400, "Invalid approval choice; expected one of: once, session, always, deny",
                       "invalid_approval_choice")
    return choice


async def answer_approval(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs/{run_id}/approval: answer the run's oldest pending approval (or all)."""
    run_id = request.path_params["run_id"]
    if await _status(ctx, run_id) is None:
        raise run_not_found(run_id)
    body = await read_json_object(request, crashing_non_object, _invalid_json)
    choice = _choice(body)
    every = request_bool(body.get("all")) or request_bool(body.get("resolve_all"))
    resolved = ctx.runs.respond(run_id, choice, every)
    if resolved is None:
        raise ApiError(409, f"Run has no active approval session: {run_id}", "approval_not_active")
    if resolved == 0:
        raise ApiError(409, f"Run has no pending approval: {run_id}", "approval_not_pending")
    return HermesJSONResponse({"object": "hermes.run.approval_response", "run_id": run_id,
                               "choice": choice, "resolved": resolved})


async def steer_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs/{run_id}/steer (0.20+): guidance for a running agent, checked in upstream's
    order: the run, that it is running, then the body. The agent takes it before its next step;
    what it never took is `pending_steer` on `run.completed` (docs/differences.md)."""
    run_id = request.path_params["run_id"]
    if await _status(ctx, run_id) is None:
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


def _steer_route() -> Route:
    return Route("run_steer", "/v1/runs/{run_id}/steer", {
        "POST": Method(steer_run, Operation(
            summary="Steer a running agent (it sees the text before its next step)",
            responses={200: "RunSteer", 400: "BadRequest", 404: "NotFound", 409: "Conflict",
                       413: "PayloadTooLarge", **AUTH_ERRORS},
            capability="run_steer", features=("run_steer",), body="RunSteerRequest"))})


def routes(profile: Profile = HERMES_0_19) -> list[Route]:
    """The five run routes and what they promise; a profile with steer serves it after approval,
    as upstream's table lists it."""
    steer = [_steer_route()] if Addition.RUN_STEER in profile else []
    stop_conflict = {409: "Conflict"} if Addition.RUN_STOP_SETTLED in profile else {}
    durable = Addition.RUN_IDEMPOTENCY in profile
    return [
        Route("runs", "/v1/runs", {
            "POST": Method(submit_run, Operation(
                summary="Start an agent run in the background; answers at once with its id",
                responses={202: "RunStarted", 400: "BadRequest", 403: "Forbidden", 413: "PayloadTooLarge",
                           **({409: "Conflict"} if durable else {}), 429: "TooManyRuns", **AUTH_ERRORS},
                capability="runs", features=("run_submission", *(("runs_idempotency",) if durable else ())),
                body="RunRequest",
                # 0.21.2's durable Idempotency-Key is documented as its addition (openapi/additions.py).
                headers=("X-Hermes-Session-Key",))),
        }),
        Route("run_status", "/v1/runs/{run_id}", {
            "GET": Method(run_status, Operation(
                summary="The run's pollable status", responses={200: "RunStatus", 404: "NotFound", **AUTH_ERRORS},
                capability="run_status", features=("run_status",))),
        }),
        Route("run_events", "/v1/runs/{run_id}/events", {
            "GET": Method(run_events, Operation(
                summary="The run's events as server-sent events (one shared queue, see docs)",
                responses={200: "RunEvents", 404: "NotFound", **AUTH_ERRORS},
                capability="run_events", features=("run_events_sse", "tool_progress_events", "approval_events"))),
        }),
        Route("run_approval", "/v1/runs/{run_id}/approval", {
            "POST": Method(answer_approval, Operation(
                summary="Answer the run's pending tool approval",
                responses={200: "RunApprovalResponse", 400: "BadRequest", 404: "NotFound", 409: "Conflict",
                           413: "PayloadTooLarge", **AUTH_ERRORS},
                capability="run_approval", features=("run_approval_response",), body="RunApprovalRequest")),
        }),
        *steer,
        Route("run_stop", "/v1/runs/{run_id}/stop", {
            "POST": Method(stop_run, Operation(
                summary="Stop a live run", responses={200: "RunStopping", 404: "NotFound", **stop_conflict,
                                                      **AUTH_ERRORS},
                capability="run_stop", features=("run_stop",))),
        }),
    ]
