"""Response classes that serialise exactly as upstream (aiohttp's `json.dumps` defaults).

aiohttp's `web.json_response` uses `json.dumps` with `ensure_ascii=True` and the default
`", "`/`": "` separators, and labels the body `application/json; charset=utf-8`.
Connectors that compare raw bytes see the same bytes from us.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

JSON_CONTENT_TYPE = "application/json; charset=utf-8"

# Added by upstream's security middleware to JSON answers produced by handlers
# (successes and handler-made errors), never to 413, framework 404/405/500 or SSE.
SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "X-XSS-Protection": "0",
    "Referrer-Policy": "no-referrer",
}


# The same, as the raw (name, value) pairs an ASGI response start carries: encoded once.
_SECURITY_RAW = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in SECURITY_HEADERS.items()]


def dumps(payload: Any) -> bytes:
    """Serialise like aiohttp: ASCII-escaped, default separators, NaN allowed."""
    return json.dumps(payload).encode("ascii")


class ExactResponse(Response):
    """A response whose Content-Type is sent verbatim (Starlette would append a charset)."""

    # Each subclass names its exact Content-Type.
    media_type: str
    # Raw headers sent after Content-Length and before the extras (none here).
    fixed_headers: Sequence[tuple[bytes, bytes]] = ()

    def init_headers(self, headers: Any = None) -> None:
        """Build raw headers: exact Content-Type, Content-Length, the fixed ones, then the extras."""
        body = getattr(self, "body", b"")
        raw = [
            (b"content-type", self.media_type.encode("latin-1")),
            (b"content-length", str(len(body)).encode("latin-1")),
            *self.fixed_headers,
        ]
        for key, value in (headers or {}).items():
            # aiohttp sends header values as UTF-8 (e.g. a session id `é` as C3 A9).
            raw.append((key.lower().encode("latin-1"), value.encode("utf-8", "surrogateescape")))
        self.raw_headers = raw


class HermesJSONResponse(ExactResponse):
    """A handler's JSON answer, carrying the security headers upstream adds."""

    media_type = JSON_CONTENT_TYPE
    # Every handler answer carries the security headers, unless made with `secure=False`.
    fixed_headers = _SECURITY_RAW

    def __init__(
        self,
        content: Any,
        status_code: int = 200,
        headers: dict[str, str] | None = None,
        secure: bool = True,
    ) -> None:
        self.init_encoded(dumps(content), status_code, headers, secure)

    @classmethod
    def encoded(cls, body: bytes, status_code: int = 200) -> HermesJSONResponse:
        """The answer for a body already serialised by `dumps` (a remembered one)."""
        response = cls.__new__(cls)
        response.init_encoded(body, status_code, None, True)
        return response

    def init_encoded(self, body: bytes, status_code: int, headers: dict[str, str] | None, secure: bool) -> None:
        if not secure:
            self.fixed_headers = []
        elif headers and not headers.keys().isdisjoint(SECURITY_HEADERS):
            # An extra that replaces a security header takes its place, as in a merged dict.
            self.fixed_headers = []
            headers = {**SECURITY_HEADERS, **headers}
        ExactResponse.__init__(self, body, status_code=status_code, headers=headers)


class PlainTextResponse(ExactResponse):
    """aiohttp's framework answers (404, 405, 500): text/plain with a charset, no extras."""

    media_type = "text/plain; charset=utf-8"

    def __init__(self, text: str, status_code: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(text.encode("utf-8"), status_code=status_code, headers=headers)


class EmptyResponse(ExactResponse):
    """The bare CORS refusal: a status and nothing else."""

    def __init__(self, status_code: int) -> None:
        super().__init__(b"", status_code=status_code)

    def init_headers(self, headers: Any = None) -> None:
        """Only Content-Length: 0, as aiohttp sends it."""
        self.raw_headers = [(b"content-length", b"0")]


NOT_FOUND_TEXT = "404: Not Found"
METHOD_NOT_ALLOWED_TEXT = "405: Method Not Allowed"
SERVER_ERROR_TEXT = "500 Internal Server Error\n\nServer got itself in trouble"
