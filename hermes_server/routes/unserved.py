"""0.21.2's routes hermes-server does not serve: browser control, artifacts and room members.

Upstream's 0.21.2 table (the V4 probe) has them; their behaviour needs a real browser
extension, an artifact store and hosted rooms, which this server has none of. So a client
gets an honest answer instead of a 404 that reads as "older Hermes": the key is checked
first (the profile's 401), then 501 `not_implemented`, naming the route and where it is
written down (docs/differences.md). They are in the OpenAPI document of that profile.
`/v1/capabilities` advertises the browser and artifact routes as 0.21.2 does when no browser
extension is configured: their four endpoints, and `browser_extension_control` with
`enabled: false` (true of this server). Upstream advertises no room-member route.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.context import AppContext
from hermes_server.domain.profiles import Addition, Profile
from hermes_server.http.errors import ApiError
from hermes_server.http.routing import Method, Operation, Route
from hermes_server.openapi.schemas import AUTH_ERRORS

# (route name, method, path, what upstream does there), in upstream's table order.
_BROWSER = (
    ("browser_control_register", "POST", "/v1/browser-control/register", "register a browser extension"),
    ("browser_control_ws", "GET", "/v1/browser-control/ws", "the browser extension's WebSocket"),
    ("artifact_upload", "POST", "/v1/artifacts/upload", "upload a browser artifact"),
    ("artifact_download", "GET", "/v1/artifacts/download/{artifact_id}", "download a browser artifact"),
)
_ROOMS = (
    ("room_member_invitations", "POST", "/v1/room-members/invitations", "invite a room member"),
    ("room_member_capabilities", "GET", "/v1/room-members/capabilities", "a room member's capabilities"),
    ("room_member_grants_refresh", "POST", "/v1/room-members/grants/refresh", "refresh a room grant"),
    ("room_member_grants_revoke", "POST", "/v1/room-members/grants/revoke", "revoke a room grant"),
)

async def not_implemented(request: Request, ctx: AppContext) -> Response:
    """Any of these routes, once the key is checked: 501, the route named."""
    route = f"{request.method} {request.url.path}"
    raise ApiError(501, f"{route} is a Hermes {ctx.profile.version} route that hermes-server does not serve "
                        "(see docs/differences.md)", "not_implemented", type_="server_error")


# The route whose presence makes `browser_extension_control` appear (its value, `enabled: false`,
# is profile data: domain/profiles.py).
_BROWSER_FEATURES = {"browser_control_register": ("browser_extension_control",)}


def _routes(table: tuple[tuple[str, str, str, str], ...], *, advertised: bool) -> list[Route]:
    """The routes of `table`; `advertised`: under their names in `endpoints`."""
    return [Route(name, path, {method: Method(not_implemented, Operation(
        summary=f"Not served here ({what} in Hermes 0.21.2): 501",
        responses={501: "NotImplemented", **AUTH_ERRORS},
        capability=name if advertised else None,
        features=_BROWSER_FEATURES.get(name, ())))})
        for name, method, path, what in table]


def browser_routes(profile: Profile) -> list[Route]:
    """Browser control and artifacts (after capabilities in upstream's table), in a profile that has them."""
    return _routes(_BROWSER, advertised=True) if Addition.UNSERVED_0_21 in profile else []


def room_routes(profile: Profile) -> list[Route]:
    """Room members (after the jobs in upstream's table), in a profile that has them."""
    return _routes(_ROOMS, advertised=False) if Addition.UNSERVED_0_21 in profile else []
