"""0.21's stop: a settled run (an `interrupted` one too) answers 200 with its status, a run another
server process on this home is running 409 `run_not_active`; a live run is stopped as before."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain import route_ids, run_keys
from hermes_server.http.errors import ApiError
from hermes_server.http.responses import HermesJSONResponse
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.build import error_answer, json_answer
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.routes.runs import run_not_found, status_of, stopping
from hermes_server.units.unit import Unit


async def stop_run(request: Request, ctx: AppContext) -> Response:
    """POST /v1/runs/{run_id}/stop as 0.21 answers it."""
    run_id = request.path_params["run_id"]
    if ctx.runs.request_stop(run_id):
        return stopping(run_id)
    status = await status_of(ctx, run_id)
    if status is None:
        raise run_not_found(run_id)
    if status.get("status") in run_keys.SETTLED:
        return HermesJSONResponse(status)
    raise ApiError(409, f"Run is not active in this gateway process: {run_id}", "run_not_active")


def _routes() -> list[Route]:
    return [Route(route_ids.RUN_STOP, "/v1/runs/{run_id}/stop", {
        "POST": Method(stop_run, Operation(
            summary="Stop a run",
            description="Stops a live run (it ends `cancelled`); a run that has finished answers its status; a run "
                        "another server process on this home runs is 409.",
            responses={200: "RunStopping", 404: "NotFound", 409: "RunNotActive", **AUTH_ERRORS},
            capability="run_stop", features=("run_stop",)))})]


UNIT = Unit(
    name="run_stop_settled",
    routes=_routes,
    components={
        "schemas": {
            "RunStopping": {"type": "object", "required": ["run_id", "status"], "properties": {
                "run_id": {"type": "string"}, "status": {"type": "string"}},
                "description": "`stopping` for a live run; a finished run's whole status object, as GET answers it."},
        },
        "responses": {
            "RunStopping": json_answer("The run is being stopped (`stopping`), or had finished: its status.",
                                       "RunStopping"),
            "RunNotActive": error_answer("The run is known but not live in this process (`run_not_active`)."),
        },
    },
)
