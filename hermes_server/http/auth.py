"""Bearer authentication (the pipeline's check for the `bearer` scheme) and the
`X-Hermes-Session-Key` header rules."""

from __future__ import annotations

import hmac
from typing import Callable

from starlette.requests import Request

from hermes_server.http.errors import ApiError, UndecodableBearer, Unauthorized

MAX_SESSION_KEY_LENGTH = 256

_NO_KEY_MESSAGE = (
    "X-Hermes-Session-Key requires API key authentication. "
    "Configure API_SERVER_KEY to enable this feature."
)


def raw_header(request: Request, name: bytes) -> bytes | None:
    """First raw value of a header (bytes, so non-ASCII survives as sent)."""
    headers: list[tuple[bytes, bytes]] = request.scope["headers"]
    for key, value in headers:
        if key == name:
            return value
    return None


def check_bearer(request: Request, api_key: str | None) -> None:
    """Raise the 401 unless `Authorization: Bearer <key>` matches (no key configured: open).

    Exactly `Bearer ` (capital B, one space) must prefix the header; the rest is
    trimmed and compared in constant time. A header that is not UTF-8 is simply
    a wrong key (D5), never a 500.
    """
    if not api_key:
        return
    raw = raw_header(request, b"authorization") or b""
    try:
        header = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UndecodableBearer() from None
    if header.startswith("Bearer "):
        token = header[7:].strip()
        if hmac.compare_digest(token.encode("utf-8", "surrogatepass"), api_key.encode("utf-8")):
            return
    raise Unauthorized()


def bearer_check(api_key: str | None) -> Callable[[Request], None]:
    """The pipeline's check of the `bearer` scheme for a server whose key is `api_key`."""
    def check(request: Request) -> None:
        check_bearer(request, api_key)
    return check


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
