"""One server for a home's several Hermes profiles, as 0.21.6 serves them
(https://github.com/NousResearch/hermes-agent/pull/112854).

A home holding named profiles (`profiles/<name>/`, cli/profiles.py finds them) is served as one
ASGI app: each named profile is an app of its own (its home's state.db, stores, runs and key),
reached under `/p/<name>/`; everything else goes to the default profile's app, which answers
unprefixed paths and `/p/default/`, and answers a route under the prefix of a profile not served
with upstream's 404 `{"error": "Unknown or unconfigured profile"}` (http/pipeline.py). A run,
session or response of one profile is not seen through another's prefix: they live in different
apps. The lifespan starts and stops every app, and a shutdown's beginning reaches each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from urllib.parse import unquote

from starlette.types import Receive, Scope, Send

from hermes_server.app import HermesApp, run_lifespan
from hermes_server.context import AppContext
from hermes_server.http.paths import segment_value


class ProfileMount:
    """The ASGI app of a multiplexing server: `named` maps each named profile to its app."""

    def __init__(self, default: HermesApp, named: Mapping[str, HermesApp]) -> None:
        self.default = default
        self.named = dict(named)
        default.pipeline.profiles = frozenset({"default", *named})  # the others' prefixes: 404

    @property
    def context(self) -> AppContext:
        """The default profile's context (what the transport reads: cli/serve.py)."""
        return self.default.context

    @property
    def apps(self) -> list[HermesApp]:
        return [self.default, *self.named.values()]

    def begin_shutdown(self) -> None:
        for app in self.apps:
            app.begin_shutdown()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = (scope.get("raw_path") or scope["path"].encode("utf-8")).decode("latin-1")
        segments = raw.split("/")
        if len(segments) > 3 and segments[1] == "p" and segments[2]:
            app = self.named.get(segment_value(segments[2]).strip())
            if app is not None:
                rest = "/" + "/".join(segments[3:])
                scope = {**scope, "path": unquote(rest), "raw_path": rest.encode("latin-1"),
                         "root_path": scope.get("root_path", "") + "/p/" + segments[2]}
                await app(scope, receive, send)
                return
        await self.default(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await run_lifespan(receive, send, self._start, self._stop)

    async def _start(self) -> str | None:
        for app in self.apps:
            failure = await app.start()
            if failure is not None:
                return failure
        return None

    async def _stop(self, drain_seconds: float | None) -> None:
        await asyncio.gather(*(app.stop(drain_seconds) for app in self.apps))
