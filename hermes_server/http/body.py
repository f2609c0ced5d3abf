"""Reading a JSON request body the way upstream does, with the size limit enforced.

Upstream decodes the body as text (Content-Type charset, else UTF-8) and parses it
with Python's `json.loads`: NaN/Infinity are accepted, a UTF-8 BOM is not, and the
Content-Type itself is never checked. A body that grows past the limit while being
read (no Content-Length) is a 413 here (D4), and reading stops at the limit. The
limit is the pipeline's: it leaves it in the request's scope, so no handler passes it.

A client that hangs up mid-body, or sends a body the HTTP parser refuses (uvicorn then
answers 400 itself and closes the connection), ends the read with `ClientLeft`: the
request is over, and nobody is left to answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import ClientDisconnect, Request

from hermes_server.http.errors import ApiError, ChunkedBodyTooLarge, invalid_json, not_an_object

# Where the pipeline leaves the body limit (bytes) in the request's scope.
BODY_LIMIT_KEY = "hermes.body_limit"


def charset(request: Request) -> str:
    """The Content-Type's charset, else UTF-8 (how aiohttp decodes a body as text)."""
    content_type = request.headers.get("content-type", "")
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


class ClientLeft(Exception):
    """The connection ended before the request body was read whole: not an error of the server."""


async def read_body(request: Request) -> bytes:
    """The raw body, refusing (413) as soon as it exceeds the pipeline's limit."""
    limit: int = request.scope[BODY_LIMIT_KEY]
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:  # D4 (a Content-Length over the limit never gets this far)
                raise ChunkedBodyTooLarge()
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientLeft() from None
    return b"".join(chunks)


async def read_json_value(request: Request, invalid: Callable[[], ApiError] = invalid_json) -> Any:
    """The body as any JSON value; `invalid()` is the route's answer to a body that is not JSON."""
    raw = await read_body(request)
    try:
        return json.loads(raw.decode(charset(request)))
    except Exception:  # noqa: BLE001 - any decode/parse failure, RecursionError included, is "Invalid JSON"
        raise invalid() from None


async def read_json_object(request: Request, non_object: Callable[[], Exception] = not_an_object,
                           invalid: Callable[[], ApiError] = invalid_json) -> dict[str, Any]:
    """The body as a JSON object, or the 400/413 upstream's handlers give (`non_object` when it is not one)."""
    payload = await read_json_value(request, invalid)
    if not isinstance(payload, dict):
        raise non_object()
    return payload
