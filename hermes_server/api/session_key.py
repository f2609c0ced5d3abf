"""The `X-Hermes-Session-Key` header: the memory scope a chat turn names, and its rules."""

from __future__ import annotations

from starlette.requests import Request

from hermes_server.http.auth import raw_header
from hermes_server.http.errors import ApiError

MAX_SESSION_KEY_LENGTH = 256

_NO_KEY_MESSAGE = (
    "X-Hermes-Session-Key requires API key authentication. "
    "Configure API_SERVER_KEY to enable this feature."
)


def session_key(request: Request, api_key: str | None) -> str | None:
    """The memory-scope key of a chat turn, or None when absent or blank.

    Checked before the database and the 404: 403 when the server has no API key,
    400 (two-field envelope) for CR/LF/NUL or more than 256 characters.
    """
    raw = raw_header(request, b"x-hermes-session-key")
    if raw is None:
        return None
    value = raw.decode("utf-8", "surrogateescape").strip()
    if not value:
        return None
    if not api_key:
        raise ApiError(403, _NO_KEY_MESSAGE)
    if any(ch in value for ch in "\r\n\x00"):
        raise ApiError(400, "Invalid session key", shape="two_field")
    if len(value) > MAX_SESSION_KEY_LENGTH:
        raise ApiError(400, "Session key too long", shape="two_field")
    return value
