"""The ceiling: a bare Starlette + uvicorn app that answers the same bytes from memory.

No auth, no database, no projection: a dict lookup and a Response. Whatever
hermes-server does on top of that is its own cost, so "hermes-server / ceiling"
is the share of the framework's best that the real work leaves.

    python -m benchmarks.ceiling BODIES.json PORT

BODIES.json maps a request path (with query string) to the exact response body
text; `POST /api/sessions` answers the body stored under `POST /api/sessions`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

JSON_TYPE = "application/json; charset=utf-8"


def build_app(bodies: dict[str, bytes]) -> Starlette:
    """Routes shaped like hermes-server's, each a lookup in `bodies`."""
    missing = Response(b'{"error": "not in the ceiling set"}', 404, media_type=JSON_TYPE)

    async def lookup(request: Request) -> Response:
        path = request.url.path
        if request.url.query:
            path += "?" + request.url.query
        body = bodies.get(path)
        return missing if body is None else Response(body, media_type=JSON_TYPE)

    async def create(request: Request) -> Response:
        await request.body()
        return Response(bodies["POST /api/sessions"], 201, media_type=JSON_TYPE)

    return Starlette(routes=[
        Route("/api/sessions", lookup, methods=["GET"]),
        Route("/api/sessions", create, methods=["POST"]),
        Route("/api/sessions/{session_id}", lookup, methods=["GET"]),
        Route("/api/sessions/{session_id}/messages", lookup, methods=["GET"]),
        Route("/health", lambda request: Response(b'{"status": "ok"}', media_type=JSON_TYPE)),
    ])


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    raw = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    bodies = {path: text.encode("utf-8") for path, text in raw.items()}
    uvicorn.run(build_app(bodies), host="127.0.0.1", port=int(args[1]), log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
