"""What a version profile (domain/profiles.py) swaps in the app and adds to it.

Each newer behaviour is one `Addition` of the profile; here it becomes error-map rows
(the 401 envelope of 0.20+) or route groups, chosen once when the app is built, so no
handler asks which release it answers as. docs/versions.md lists each with its source.
"""

from __future__ import annotations

from collections.abc import Mapping

from hermes_server.domain.profiles import Addition, Profile
from hermes_server.http.errors import ApiError, Handler, Unauthorized


def gateway_auth_failed() -> ApiError:
    """0.20+'s 401 (#70169): its own type and code, and still no `param` key."""
    return ApiError(401, "Invalid gateway API key (API_SERVER_KEY)", "gateway_auth_failed",
                    type_="gateway_auth_error", shape="no_param")


def profile_rows(profile: Profile) -> Mapping[type[BaseException], Handler]:
    """Error-map rows the profile swaps in (none for 0.19.0)."""
    rows: dict[type[BaseException], Handler] = {}
    if Addition.GATEWAY_AUTH in profile:
        rows[Unauthorized] = lambda exc: gateway_auth_failed().response()
    return rows
