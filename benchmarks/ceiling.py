"""The ceiling: a bare Starlette + uvicorn app that replays hermes-server's answers from memory.

No auth, no database, no projection: routing, a dict lookup and a Response whose
status, headers and body are the ones hermes-server sent for that request
(benchmarks/recording.py records them and checks the replay). Whatever
hermes-server does on top of that is its own cost, so "hermes-server / ceiling"
is the share of the framework's best that the real work leaves.

    python -m benchmarks.ceiling ANSWERS.json PORT

ANSWERS.json maps `METHOD path` (reads, with the query string) or `METHOD pattern`
(writes, `{id}` for the session id) to a recorded answer: status, headers in wire
order, body.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

MISSING = b'{"error": "not in the ceiling set"}'


class Replayed(Response):
    """A recorded answer, built per request as an app builds its own: raw headers as recorded."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status_code = status
        self.raw_headers = headers
        self.body = body
        self.background = None


Prepared = tuple[int, list[tuple[bytes, bytes]], bytes]


def _prepared(raw: dict[str, Any]) -> Prepared:
    """Status, wire headers (content-length computed where it was) and body of one recorded answer."""
    body = raw["body"].encode("latin-1")
    headers = [(k.encode("latin-1"), str(len(body)).encode() if k.lower() == "content-length"
                else v.encode("latin-1")) for k, v in raw["headers"]]
    return raw["status"], headers, body


def build_app(answers: dict[str, dict[str, Any]]) -> Starlette:
    """One route per recorded route path; each answers by exact path, else by its pattern (writes)."""
    prepared = {key: _prepared(raw) for key, raw in answers.items()}
    missing: Prepared = (404, [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(MISSING))],
                         MISSING)

    def endpoint(pattern: str) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            await request.body()  # read what the client sent, as hermes-server does
            path = request.url.path + ("?" + request.url.query if request.url.query else "")
            found = prepared.get(f"{request.method} {path}") or prepared.get(f"{request.method} {pattern}") or missing
            return Replayed(*found)
        return answer

    methods: dict[str, set[str]] = {}
    for raw in answers.values():
        methods.setdefault(raw["route"], set()).add(raw["method"])
    routes = [Route(path, endpoint(path), methods=sorted(verbs)) for path, verbs in methods.items()]
    routes.append(Route("/health", lambda request: Response(b'{"status": "ok"}', media_type="application/json")))
    return Starlette(routes=routes)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    answers = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    uvicorn.run(build_app(answers), host="127.0.0.1", port=int(args[1]), log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
