"""What more than one route family needs: the path session, the identity headers, query values,
the Idempotency-Key of a waited-for turn, a stream's response.

The one module routes may share; route modules never import each other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import Response

from hermes_server.api.errors import session_not_found
from hermes_server.chat.hooks import Point
from hermes_server.chat.replay import Idempotency
from hermes_server.context import AppContext
from hermes_server.domain.model_lock import Inventory
from hermes_server.http.sse import EventQueue, sse_response
from hermes_server.store import sessions

# Chat reads X-Hermes-Session-Key and answers with X-Hermes-Session-Id, so serving it
# makes both header features true in /v1/capabilities.
CHAT_HEADER_FEATURES = ("session_key_header", "session_continuity_header")


async def existing_session(ctx: AppContext, session_id: str) -> dict[str, Any]:
    """The exact row for a path id: 503 when storage is down, else 404 when absent; read as the
    release reads rows (a v25+ prompt behind its hash counts under 0.20+)."""
    await ctx.db.ensure_open()
    row = await ctx.db.read(sessions.get_session, session_id, ctx.behaviour.reading)
    if row is None:
        raise session_not_found(session_id)
    return row


def inventory(ctx: AppContext) -> Inventory:
    """The models this server routes to (0.20+'s model options and locks): the configured agent,
    answering as --model-name."""
    settings = ctx.settings
    return Inventory.of(settings.agent, settings.model_name, settings.agent_model)


def identity_headers(session_id: str, key: str | None) -> dict[str, str]:
    """`X-Hermes-Session-Id`, plus the echoed `X-Hermes-Session-Key` when one was sent."""
    headers = {"X-Hermes-Session-Id": session_id}
    if key:
        headers["X-Hermes-Session-Key"] = key
    return headers


def idempotency(request: Request, body: dict[str, Any],
                fingerprint: Callable[[dict[str, Any]], str]) -> Idempotency | None:
    """The `Idempotency-Key` a waited-for turn is replayed by, with the body's `fingerprint`
    (taken only when a key was sent); None without one (an empty value is none)."""
    key = request.headers.get("idempotency-key")
    return Idempotency(key, fingerprint(body)) if key else None


def stream_answer(ctx: AppContext, frames: AsyncIterator[bytes] | EventQueue,
                  headers: dict[str, str], *, cors: bool = True) -> Response:
    """Every stream's response: its frames (a queue's, with the idle keepalive), as test control
    lets them through (a fault's hook may cut them; nothing by default), with upstream's headers."""
    if isinstance(frames, EventQueue):
        frames = frames.frames(ctx.settings.keepalive_seconds)
    return sse_response(ctx.hooks.at(Point.STREAM).frames(frames), headers, cors=cors)


def first_query_values(request: Request) -> dict[str, str]:
    """Each query parameter's first value (upstream reads `request.query.get`)."""
    first: dict[str, str] = {}
    query = request.scope.get("query_string", b"").decode("utf-8", "replace")
    for key, value in parse_qsl(query, keep_blank_values=True):
        first.setdefault(key, value)
    return first
