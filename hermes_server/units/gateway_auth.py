"""0.20+'s 401: `gateway_auth_failed`, type `gateway_auth_error`, for a missing or wrong key
(https://github.com/NousResearch/hermes-agent/pull/70169)."""

from __future__ import annotations

from hermes_server.http.errors import ApiError, ErrorMap, Unauthorized
from hermes_server.openapi.build import error_answer
from hermes_server.units.unit import ErrorRows, Unit


def gateway_auth_failed() -> ApiError:
    """Its own type and code, and still no `param` key."""
    return ApiError(401, "Invalid gateway API key (API_SERVER_KEY)", "gateway_auth_failed",
                    type_="gateway_auth_error", shape="no_param")


def _rows(table: ErrorMap) -> ErrorRows:
    return {Unauthorized: lambda exc: gateway_auth_failed().response()}


UNIT = Unit(
    name="gateway_auth",
    errors=_rows,
    components={"responses": {
        "Unauthorized": error_answer("Missing or wrong bearer key: type `gateway_auth_error`, code "
                                     "`gateway_auth_failed` (envelope without `param`)."),
    }},
)
