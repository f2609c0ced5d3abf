"""Bearer authentication: the pipeline's check for the `bearer` scheme, and raw header reads."""

from __future__ import annotations

import hmac
from collections.abc import Callable

from starlette.requests import Request

from hermes_server.http.errors import Unauthorized, UndecodableBearer


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
