"""The cron jobs API (`/api/jobs…`), served as 0.19.0 serves it from a home without a ticker.

Jobs are stored in Hermes's own `cron/jobs.json` (store/jobs.py), so a real Hermes
gateway pointed at the same HERMES_HOME runs them; hermes-server itself never does,
and `POST …/run` only makes a job due now. The envelopes are bare `{"error": "…"}`
strings; create answers 200, not 201, as 0.19.0 does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain import job_snapshots, jobs, route_ids
from hermes_server.domain.jobs import guarded, not_found
from hermes_server.domain.route_ids import RouteId
from hermes_server.families import Family
from hermes_server.http.body import charset, read_body
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.jobs_schemas import COMPONENTS, CREATE_JOB, JOB_ERRORS, JOB_ID_ERRORS
from hermes_server.routes.common import first_query_values
from hermes_server.store.jobs import JobsFile, local_time

Jobs = list[dict[str, Any]]


def _now(ctx: AppContext) -> datetime:
    return local_time(ctx.now())


def _file(ctx: AppContext) -> JobsFile:
    return ctx.jobs


async def _json_body(request: Request, ctx: AppContext) -> Any:
    """The parsed body; any decode or parse failure is reported with Python's own text."""
    raw = await read_body(request)
    return guarded(lambda: json.loads(raw.decode(charset(request))))


def _job_answer(job: dict[str, Any]) -> Response:
    return HermesJSONResponse({"job": job})


def _path_id(request: Request) -> str:
    job_id = request.path_params["job_id"]
    jobs.check_job_id(job_id)
    return job_id


async def list_jobs(request: Request, ctx: AppContext) -> Response:
    """GET /api/jobs: creation order; `include_disabled=true|1` also shows disabled jobs."""
    include = first_query_values(request).get("include_disabled", "").lower() in {"true", "1"}
    stored, latest = await _file(ctx).listing()
    return HermesJSONResponse({"jobs": jobs.listed(stored, include, latest)})


async def create_job(request: Request, ctx: AppContext) -> Response:
    """POST /api/jobs: validate in Hermes's order, store, answer 200 with the job."""
    body = await _json_body(request, ctx)
    now = _now(ctx)
    peer = request.client.host if request.client else ""
    origin = jobs.origin(peer, request.headers.get("x-forwarded-for", ""), request.headers.get("x-real-ip", ""),
                         request.headers.get("user-agent", ""))
    inference = job_snapshots.snapshots(await _file(ctx).model_section(), os.environ)
    job = guarded(lambda: jobs.new_job(body, ctx.ids.job_id(), now, origin, inference))
    await _file(ctx).change(lambda stored: ([*stored, job], None))
    return _job_answer(job)


async def get_job(request: Request, ctx: AppContext) -> Response:
    """GET /api/jobs/{job_id}: by exact id only (names do not resolve here)."""
    job_id = _path_id(request)
    for job in await _file(ctx).read():
        if job["id"] == job_id:
            return _job_answer(jobs.readable(job))
    raise not_found()


async def _apply(ctx: AppContext, job_id: str, updates: Callable[[dict[str, Any]], dict[str, Any]]) -> Response:
    """Change the job with exactly `job_id` (its fields from `updates(job)`), answering the result."""
    now = _now(ctx)

    def edit(stored: Jobs) -> tuple[Jobs | None, dict[str, Any] | None]:
        for index, job in enumerate(stored):
            if job["id"] == job_id:
                def change(job: dict[str, Any] = job) -> dict[str, Any]:
                    return jobs.updated(job, updates(job), now)

                changed = guarded(change)
                return [*stored[:index], changed, *stored[index + 1:]], jobs.readable(changed)
        return None, None

    result = await _file(ctx).change(edit)
    if result is None:
        raise not_found()
    return _job_answer(result)


async def update_job(request: Request, ctx: AppContext) -> Response:
    """PATCH /api/jobs/{job_id}: the allowed fields are stored as given (not re-validated)."""
    job_id = _path_id(request)
    body = await _json_body(request, ctx)
    fields = guarded(lambda: jobs.patch_fields(body))
    return await _apply(ctx, job_id, lambda job: fields)


async def _by_ref(ctx: AppContext, ref: str) -> dict[str, Any]:
    """The job an action path names (its id, else its name in any case)."""
    stored = await _file(ctx).read()
    job = guarded(lambda: jobs.find_ref(stored, ref))
    if job is None:
        raise not_found()
    return job


async def delete_job(request: Request, ctx: AppContext) -> Response:
    """DELETE /api/jobs/{job_id}: the job and its output directory go; 200 {"ok": true}."""
    file = _file(ctx)
    job_id = (await _by_ref(ctx, _path_id(request)))["id"]

    def edit(stored: Jobs) -> tuple[Jobs | None, bool]:
        kept = [job for job in stored if job["id"] != job_id]
        return (kept, True) if len(kept) < len(stored) else (None, False)

    if not await file.change(edit):
        raise not_found()
    file.remove_output(job_id)
    return HermesJSONResponse({"ok": True})


async def pause_job(request: Request, ctx: AppContext) -> Response:
    """POST /api/jobs/{job_id}/pause: disabled, state paused (the body is ignored)."""
    job = await _by_ref(ctx, _path_id(request))
    now = _now(ctx)
    return await _apply(ctx, job["id"], lambda stored: jobs.paused(now))


async def resume_job(request: Request, ctx: AppContext) -> Response:
    """POST /api/jobs/{job_id}/resume: scheduled again, next run counted from now."""
    job = await _by_ref(ctx, _path_id(request))
    fields = guarded(lambda: jobs.resumed(job, _now(ctx)))
    return await _apply(ctx, job["id"], lambda stored: fields)


async def run_job(request: Request, ctx: AppContext) -> Response:
    """POST /api/jobs/{job_id}/run: due now; a Hermes ticker on this home would run it."""
    job = await _by_ref(ctx, _path_id(request))
    now = _now(ctx)
    return await _apply(ctx, job["id"], lambda stored: jobs.triggered(now))


def _action(route: RouteId, name: str, endpoint: Any, summary: str, description: str) -> Route:
    """A job action (pause, resume, run), which names the job by its id or by a name of that form."""
    return Route(route, f"/api/jobs/{{job_id}}/{name}", {"POST": Method(endpoint, Operation(
        summary=summary, description=f"{description} The path names the job by its id, or by a name of that form.",
        responses={200: "Job", **JOB_ID_ERRORS}))})


def routes() -> list[Route]:
    """The jobs family, in upstream's order. None is advertised in /v1/capabilities (nor upstream's)."""
    return [
        Route(route_ids.JOBS, "/api/jobs", {
            "GET": Method(list_jobs, Operation(
                summary="List jobs", description="Cron jobs, in creation order; disabled ones only with "
                                                 "`include_disabled`.",
                responses={200: "JobList", **JOB_ERRORS}, query=("include_disabled",))),
            "POST": Method(create_job, Operation(
                summary="Create a job", description=CREATE_JOB, responses={200: "Job", 400: "JobError", **JOB_ERRORS},
                body="JobCreate")),
        }),
        Route(route_ids.JOB, "/api/jobs/{job_id}", {
            "GET": Method(get_job, Operation(
                summary="Get a job", description="The job with exactly this id (a name does not resolve here).",
                responses={200: "Job", **JOB_ID_ERRORS})),
            "PATCH": Method(update_job, Operation(
                summary="Update a job", description="Stores the fields given as they are (a PATCH does not check them "
                                                    "as a create does), as upstream.",
                responses={200: "Job", **JOB_ID_ERRORS}, body="JobUpdate")),
            "DELETE": Method(delete_job, Operation(
                summary="Delete a job", description="Deletes the job and its output. The path names the job by its "
                                                    "id, or by a name of that form.",
                responses={200: "JobDeleted", **JOB_ID_ERRORS})),
        }),
        _action(route_ids.JOB_PAUSE, "pause", pause_job, "Pause a job",
                "Disables the job (state `paused`); the body is ignored."),
        _action(route_ids.JOB_RESUME, "resume", resume_job, "Resume a job",
                "Schedules a paused job again, its next run counted from now."),
        _action(route_ids.JOB_RUN, "run", run_job, "Run a job now",
                "Makes the job due now: a Hermes gateway ticking on this home runs it (hermes-server itself runs "
                "no job)."),
    ]


def family() -> Family:
    """The cron jobs API as a unit of the app, with the OpenAPI components its routes name."""
    return Family("jobs", routes(), components=COMPONENTS)
