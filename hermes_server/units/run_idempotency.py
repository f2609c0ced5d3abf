"""0.21's durable `Idempotency-Key` on `POST /v1/runs` (runs_idempotency.db, store/runs_idempotency.py).

The submit reads its body before the run cap, so a replay answers even on a full server: the
same key with the same body and `X-Hermes-Session-Key` replays the run it admitted (its status
now, `replayed: true`, `Idempotency-Replayed: true`), another body is a 409, and every answer says
whether it replays. A kept run's status outlives the process: after a restart it reads
`interrupted` when it never settled (chat/runs.py `hydrate`). `/v1/capabilities` lists the
`runs_idempotency` object.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import crashing_non_object, invalid_run_json
from hermes_server.api.session_key import session_key
from hermes_server.config import Settings
from hermes_server.context import AppContext, Behaviour
from hermes_server.domain import route_ids, run_keys
from hermes_server.domain.run_keys import MAX_KEY_LENGTH
from hermes_server.http.auth import raw_header
from hermes_server.http.body import read_json_object
from hermes_server.http.errors import ApiError
from hermes_server.http.routing import Effect, Method, Operation, Route
from hermes_server.openapi.build import Components, error_answer, json_answer, with_flag
from hermes_server.openapi.common import AUTH_ERRORS, COUNTER
from hermes_server.openapi.runs_schemas import RUN_STATUSES, START_RUN
from hermes_server.openapi.runs_schemas import SCHEMAS as RUN_SCHEMAS
from hermes_server.routes.runs import accepted, prepare, register, spawn
from hermes_server.store.runs_idempotency import KeptRun, Owner, RunKeyStore
from hermes_server.units.unit import Unit

# This process, as the owner its kept runs record (a restart is another owner).
OWNER = Owner.this_process()
# Scope, key, fingerprint.
Claim = tuple[str, str, str]


async def submit_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs, in upstream's order: the session key, the body, the Idempotency-Key, the input;
    a replay or conflict; then the cap, which only a new run counts against."""
    key = session_key(request, ctx.settings.api_key)
    body = await read_json_object(request, crashing_non_object, invalid_run_json)
    claim = _claim(request, ctx, body, key)
    prepared = await prepare(ctx, body)
    if claim is not None:
        outcome, record = await ctx.runs.keys.lookup(*claim, ctx.now())
        if record is not None:
            return await _replay_or_conflict(ctx, outcome, record, key, claim[0])
    with ctx.slots.admit() as admission:
        run_id, live = register(ctx, prepared)
        if claim is not None:
            replay = await _reserve(ctx, run_id, claim, key)
            if replay is not None:
                return replay
        spawn(ctx, prepared, run_id, live, key, admission)
    return _accepted(run_id, "started", key, replayed=False)


def _claim(request: Request, ctx: AppContext, body: Any, key: str | None) -> Claim | None:
    """The (scope, key, fingerprint) an `Idempotency-Key` claims, None without one; 400 for a bad key."""
    raw = raw_header(request, b"idempotency-key")
    idempotency_key = raw.decode("utf-8", "surrogateescape").strip() if raw is not None else ""
    if not run_keys.valid_key(idempotency_key):
        raise ApiError(400, run_keys.INVALID_KEY_MESSAGE, "invalid_idempotency_key")
    if not idempotency_key:
        return None
    return run_keys.scope(ctx.settings.api_key, ctx.settings.profile), idempotency_key, run_keys.fingerprint(body, key)


async def _replay_or_conflict(ctx: AppContext, outcome: str, record: KeptRun, key: str | None,
                              scope: str) -> Response:
    """409 for a key reused with another request, else the 202 of the run it admitted, with that
    run's status now."""
    if outcome == "conflict":
        raise ApiError(409, run_keys.CONFLICT_MESSAGE, "idempotency_key_conflict")
    status = await ctx.runs.hydrate(scope, record.run_id) or record.status
    return _accepted(record.run_id, str(status.get("status", "queued")), key, replayed=True)


async def _reserve(ctx: AppContext, run_id: str, claim: Claim, key: str | None) -> Response | None:
    """Record the claimed key for `run_id`; None when it is this run's. A request that reserved it
    meanwhile wins, and this one, forgotten, answers as its replay (or 409)."""
    outcome, record = await ctx.runs.keys.reserve(*claim, run_id, dict(ctx.runs.statuses[run_id]), OWNER, ctx.now())
    if outcome == "created":
        ctx.runs.kept.add(run_id)
        return None
    ctx.runs.forget(run_id)
    return await _replay_or_conflict(ctx, outcome, record, key, claim[0])


def _accepted(run_id: str, status: str, key: str | None, *, replayed: bool) -> Response:
    return accepted({"run_id": run_id, "status": status, "replayed": replayed}, key, replayed=replayed)


def _routes() -> list[Route]:
    return [Route(route_ids.RUNS, "/v1/runs", {
        "POST": Method(submit_run, Operation(
            summary="Start a run", description=START_RUN + RUN_KEY_NOTE,
            responses={202: "RunStarted", 400: "RunBadRequest", 403: "Forbidden", 409: "IdempotencyKeyConflict",
                       413: "PayloadTooLarge", 429: "TooManyRuns", **AUTH_ERRORS},
            capability="runs", features=("run_submission", "runs_idempotency"), body="RunRequest",
            # Its own Idempotency-Key component: chat completions' key keeps 0.19.0's rules.
            headers=("X-Hermes-Session-Key", "RunIdempotencyKey"), effect=Effect.UNSAFE))})]


def _kept_statuses(composed: Components) -> Components:
    """The run status as composed so far (0.20's steered one), which may also read `interrupted` (a
    kept run whose process is gone), and the capabilities with the `runs_idempotency` object."""
    status = composed["schemas"]["RunStatus"]
    return {"schemas": {
        "RunStatus": {**status, "properties": {**status["properties"], "status": {
            "enum": [*RUN_STATUSES, "interrupted"]}}},
        "Capabilities": with_flag(composed["schemas"]["Capabilities"], "runs_idempotency", {
            "type": "object", "additionalProperties": False,
            "required": ["supported", "durable", "retention_seconds"],
            "properties": {"supported": {"type": "boolean"}, "durable": {"type": "boolean"},
                           "retention_seconds": COUNTER},
            "description": "`durable`: whether runs_idempotency.db could be opened."}),
    }}


def _key_store(behaviour: Behaviour, settings: Settings) -> Behaviour:
    return replace(behaviour, run_keys=RunKeyStore(settings.runs_idempotency_path))


# What the durable Idempotency-Key adds to a submit.
RUN_KEY_NOTE = """

With an `Idempotency-Key`, a retry of the same body and `X-Hermes-Session-Key` replays the run the key \
admitted (202, `replayed: true`, its status now), for a day after that run settles and across restarts, \
even on a full server; the key with another body is 409."""

UNIT = Unit(
    name="run_idempotency",
    routes=_routes,
    behaviour=_key_store,
    refine=_kept_statuses,
    components={
        "parameters": {
            "RunIdempotencyKey": {"name": "Idempotency-Key", "in": "header", "description": (
                f"At most {MAX_KEY_LENGTH} visible ASCII characters (empty: no key). A retry with the same body "
                "and X-Hermes-Session-Key replays the run it admitted, for a day after that run settles and "
                "across restarts; another request with it is a 409."),
                "schema": {"type": "string", "maxLength": MAX_KEY_LENGTH, "pattern": "^[!-~]*$"}},
        },
        "schemas": {
            # A new run is `started`; a replay names the run it admitted, with that run's status now.
            "RunStarted": {"type": "object", "required": ["run_id", "status", "replayed"],
                           "additionalProperties": False,
                           "properties": {"run_id": RUN_SCHEMAS["RunStarted"]["properties"]["run_id"],
                                          "status": {"enum": ["started", *RUN_STATUSES, "interrupted"]},
                                          "replayed": {"type": "boolean"}}},
        },
        "responses": {
            "RunStarted": json_answer("The run is registered and its turn started (`replayed` false), or, for a "
                                      "replayed Idempotency-Key, the run it admitted with its status now.",
                                      "RunStarted", {"Idempotency-Replayed": {
                                          "description": "`true` on a replay, else absent.",
                                          "schema": {"const": "true"}}}),
            "RunBadRequest": error_answer("Invalid JSON, a body that is not an object, an invalid field, or an "
                                          "Idempotency-Key that is not 1-255 visible ASCII characters "
                                          "(`invalid_idempotency_key`)."),
            "IdempotencyKeyConflict": error_answer("The Idempotency-Key was used with another body or "
                                                   "X-Hermes-Session-Key (`idempotency_key_conflict`)."),
        },
    },
)
