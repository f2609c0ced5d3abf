"""A tiny server made only of the herm.run routes, for testing them before they are wired in.

`python -m tests.hermrun.harness --home DIR --port N [options]` runs, under uvicorn on
loopback, an ASGI app whose router holds `build_routes(store)` and nothing else, plus
the test-control calls the HTTP tests use, at the paths and with the bodies the real
server's control API is to give them (`/_fixture/clock`, `/_fixture/seed` with a
`herm_run` key, `/_fixture/reset`, `/_fixture/herm-run/sessions/{session_id}`). Once
the dialect is wired into hermes-server, the same tests run against
`serve --herm-run --fixture-api` instead (tests/hermrun/support.py).
"""

from __future__ import annotations

import argparse
import hmac
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hermes_server.config import Settings
from hermes_server.fixtures.clock import ManualClock
from hermes_server.fixtures.validate import DocumentError
from hermes_server.hermrun import fixture as hr_fixture
from hermes_server.hermrun.envelope import HermRunJSON
from hermes_server.hermrun.errors import HermRunError
from hermes_server.hermrun.projection import session_object
from hermes_server.hermrun.routes import build_routes
from hermes_server.hermrun.store import HermRunStore
from hermes_server.http.responses import METHOD_NOT_ALLOWED_TEXT, NOT_FOUND_TEXT, PlainTextResponse
from hermes_server.http.routing import Route, Router


@dataclass
class Context:
    settings: Settings
    clock: Callable[[], float] = field(default=time.time)

    def now(self) -> float:
        return self.clock()


def _problem(status: int, message: str) -> Response:
    return HermRunJSON({"error": {"type": "fixture_error", "message": message}}, status)


class Harness:
    """The ASGI app: the herm.run routes, the control calls, and the framework 404/405."""

    def __init__(self, settings: Settings, start_fixture: Any = None) -> None:
        self.ctx = Context(settings)
        self.store = HermRunStore(settings.home, write_retry_seconds=settings.write_retry_seconds)
        self.start_fixture = start_fixture
        self._rewind()
        self.router = Router(build_routes(self.store) + [
            Route("fixture_clock", "/_fixture/clock", {"POST": self.clock}),
            Route("fixture_seed", "/_fixture/seed", {"POST": self.seed}),
            Route("fixture_reset", "/_fixture/reset", {"POST": self.reset}),
            Route("fixture_herm_run_session", "/_fixture/herm-run/sessions/{session_id}", {"POST": self.state}),
            Route("health", "/health", {"GET": self.health}),
        ])

    def _rewind(self) -> None:
        if self.ctx.settings.deterministic:
            self.ctx.clock = ManualClock()
        elif isinstance(self.ctx.clock, ManualClock):
            self.ctx.clock = time.time

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    if self.start_fixture is not None:
                        await self._load(self.start_fixture, replace=False)
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await self.store.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        request = Request(scope, receive)
        raw_path = scope.get("raw_path") or quote(scope["path"]).encode()
        match = self.router.resolve(request.method, raw_path.decode("latin-1"))
        if match.route is None:
            response: Response = PlainTextResponse(NOT_FOUND_TEXT, 404)
        elif match.endpoint is None:
            response = PlainTextResponse(METHOD_NOT_ALLOWED_TEXT, 405, {"Allow": match.route.allow})
        else:
            scope["path_params"] = match.params
            response = await match.endpoint(request, self.ctx)
        await response(scope, receive, send)

    # -- control -----------------------------------------------------------

    def _authorised(self, request: Request) -> bool:
        key = self.ctx.settings.api_key
        sent = request.headers.get("authorization", "")
        return not key or hmac.compare_digest(sent.encode(), f"Bearer {key}".encode())

    async def _json(self, request: Request) -> Any:
        raw = await request.body()
        return json.loads(raw) if raw else {}

    async def _load(self, document: Any, *, replace: bool) -> hr_fixture.LoadResult:
        parsed = hr_fixture.parse_herm_run(document.get("herm_run", {}), self.ctx.now())
        return await hr_fixture.load(self.store, parsed, replace=replace)

    async def health(self, request: Request, ctx: Context) -> Response:
        return HermRunJSON({"status": "ok"})

    async def clock(self, request: Request, ctx: Context) -> Response:
        if not self._authorised(request):
            return _problem(401, "bad key")
        body = await self._json(request)
        if not isinstance(ctx.clock, ManualClock):
            ctx.clock = ManualClock(ctx.clock(), 0.0)
        if "now" in body:
            ctx.clock.set(body["now"])
        if "advance" in body:
            ctx.clock.advance(body["advance"])
        if "step" in body:
            ctx.clock.step = body["step"]
        return HermRunJSON({"object": "hermes.fixture.clock", "now": ctx.clock.peek(), "manual": True})

    async def seed(self, request: Request, ctx: Context) -> Response:
        if not self._authorised(request):
            return _problem(401, "bad key")
        try:
            result = await self._load(await self._json(request), replace=False)
        except DocumentError as exc:
            return HermRunJSON({"error": {"type": "fixture_error", "message": str(exc),
                                          "problems": [str(p) for p in exc.problems]}}, 400)
        return HermRunJSON({"object": "hermes.fixture.seeded", "herm_run": result.as_json()})

    async def reset(self, request: Request, ctx: Context) -> Response:
        if not self._authorised(request):
            return _problem(401, "bad key")
        self._rewind()
        if self.start_fixture is not None:
            result = await self._load(self.start_fixture, replace=True)
        else:
            await self.store.reset()
            result = hr_fixture.LoadResult(0, 0, 0)
        return HermRunJSON({"object": "hermes.fixture.reset", "herm_run": result.as_json()})

    async def state(self, request: Request, ctx: Context) -> Response:
        if not self._authorised(request):
            return _problem(401, "bad key")
        try:
            status, usage = hr_fixture.parse_state(await self._json(request))
        except DocumentError as exc:
            return _problem(400, str(exc))
        try:
            row = await self.store.set_state(request.scope["path_params"]["session_id"], ctx.now(),
                                             status=status, usage=usage)
        except HermRunError as exc:
            return HermRunJSON(exc.body(), exc.status)
        return HermRunJSON(session_object(row))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--herm-run-key")
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--fixture", type=Path)
    parser.add_argument("--allowance", type=int, default=5)
    parser.add_argument("--window", type=float, default=60.0)
    args = parser.parse_args()
    settings = Settings(home=args.home, port=args.port, api_key=args.api_key, deterministic=args.deterministic,
                        herm_run=True, herm_run_key=args.herm_run_key, herm_run_allowance=args.allowance,
                        herm_run_window_seconds=args.window, fixture_path=args.fixture)
    start = json.loads(args.fixture.read_text()) if args.fixture else None
    uvicorn.run(Harness(settings, start), host="127.0.0.1", port=args.port, log_level="warning",
                lifespan="on")


if __name__ == "__main__":
    main()
