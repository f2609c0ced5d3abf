"""0.21.2's routes hermes-server does not serve: browser control, artifacts and room members.

Upstream's 0.21.2 route table has them; their behaviour needs a real browser
extension, an artifact store and hosted rooms, which this server has none of. So a client
gets an honest answer instead of a 404 that reads as "older Hermes": the key is checked
first (the release's 401), then 501 `not_implemented`, naming the route and where it is
written down (docs/differences.md). They are in the OpenAPI document of that release.
`/v1/capabilities` advertises the browser and artifact routes as 0.21.2 does when no browser
extension is configured: their four endpoints, and `browser_extension_control` with
`enabled: false` (true of this server; its value is profile data, domain/profiles.py).
Upstream advertises no room-member route.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain import route_ids
from hermes_server.domain.route_ids import RouteId
from hermes_server.http.errors import ApiError
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.build import Components, error_answer, with_flag
from hermes_server.openapi.common import AUTH_ERRORS
from hermes_server.units.unit import Unit

# (route, method, path, what upstream does there, advertised in /v1/capabilities).
_ROUTES: tuple[tuple[RouteId, str, str, str, bool], ...] = (
    (route_ids.BROWSER_CONTROL_REGISTER, "POST", "/v1/browser-control/register", "register a browser extension", True),
    (route_ids.BROWSER_CONTROL_WS, "GET", "/v1/browser-control/ws", "the browser extension's WebSocket", True),
    (route_ids.ARTIFACT_UPLOAD, "POST", "/v1/artifacts/upload", "upload a browser artifact", True),
    (route_ids.ARTIFACT_DOWNLOAD, "GET", "/v1/artifacts/download/{artifact_id}", "download a browser artifact", True),
    (route_ids.ROOM_MEMBER_INVITATIONS, "POST", "/v1/room-members/invitations", "invite a room member", False),
    (route_ids.ROOM_MEMBER_CAPABILITIES, "GET", "/v1/room-members/capabilities", "a room member's capabilities",
     False),
    (route_ids.ROOM_MEMBER_GRANTS_REFRESH, "POST", "/v1/room-members/grants/refresh", "refresh a room grant", False),
    (route_ids.ROOM_MEMBER_GRANTS_REVOKE, "POST", "/v1/room-members/grants/revoke", "revoke a room grant", False),
)
# The route whose presence makes `browser_extension_control` appear.
_BROWSER_FEATURES = {route_ids.BROWSER_CONTROL_REGISTER: ("browser_extension_control",)}


async def not_implemented(request: Request, ctx: AppContext) -> Response:
    """Any of these routes, once the key is checked: 501, the route named."""
    route = f"{request.method} {request.url.path}"
    raise ApiError(501, f"{route} is a Hermes {ctx.version} route that hermes-server does not serve "
                        "(see docs/differences.md)", "not_implemented", type_="server_error")


def _routes() -> list[Route]:
    return [Route(name, path, {method: Method(not_implemented, Operation(
        summary=f"{what[0].upper()}{what[1:]} (not served)",
        description=f"In Hermes 0.21.2: {what}. hermes-server does not serve it: once the key is checked, it "
                    "answers 501 `not_implemented` (docs/differences.md).",
        responses={501: "NotImplemented", **AUTH_ERRORS},
        capability=name if advertised else None,
        features=_BROWSER_FEATURES.get(name, ())))})
        for name, method, path, what, advertised in _ROUTES]


def _browser_control(composed: Components) -> Components:
    """The capabilities with the `browser_extension_control` object, as upstream shows it with no
    extension configured."""
    return {"schemas": {"Capabilities": with_flag(composed["schemas"]["Capabilities"], "browser_extension_control", {
        "type": "object", "required": ["enabled", "protocol_version"],
        "properties": {"enabled": {"const": False}, "protocol_version": {"const": 1}},
        "description": "0.21.2's browser control, as upstream shows it with no extension "
                       "configured: not enabled (its routes answer 501 here)."})}}


UNIT = Unit(
    name="unserved_0_21",
    routes=_routes,
    refine=_browser_control,
    components={
        "responses": {
            "NotImplemented": error_answer("A Hermes 0.21.2 route this server does not serve (`not_implemented`; "
                                           "docs/differences.md)."),
        },
        "parameters": {
            "artifact_id": {"name": "artifact_id", "in": "path", "required": True,
                            "schema": {"type": "string", "pattern": "^[^{}/]+$"}},
        },
    },
)
