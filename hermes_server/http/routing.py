"""Routes, what each method promises, and a router that matches on the raw path.

aiohttp matches `{session_id}` against one raw path segment and then percent-decodes
it: `/api/sessions/a%2Fb` addresses the id `a/b`. ASGI servers hand Starlette an
already-decoded path, where that distinction is lost, hence this module.

Each method of a route carries an `Operation`: the only description of the API, from
which /openapi.json and /v1/capabilities are generated, and the contract the pipeline
enforces (its security scheme).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_server.http.paths import path_safe, segment_value

if TYPE_CHECKING:
    from hermes_server.http.errors import ErrorMap

Endpoint = Callable[..., Awaitable[Any]]


# The security scheme of the Hermes routes (`Authorization: Bearer <key>`).
BEARER = "bearer"


@dataclass(frozen=True, kw_only=True)
class Operation:
    """What clients may rely on for one method of one route.

    `capability` is the operation's name under `/v1/capabilities` `endpoints` (upstream's
    names; None for paths upstream does not advertise). `features` are the capability
    flags that serving this operation makes true. `responses` maps each status the
    handler can answer to a response name of the OpenAPI document. `security` names the
    OpenAPI security scheme a caller must satisfy (a dialect names its own; None: open):
    the pipeline runs that scheme's check before the handler, so the document and the
    answers cannot disagree.
    """

    summary: str
    responses: Mapping[int, str]
    capability: str | None = None
    features: tuple[str, ...] = ()
    security: str | None = BEARER
    body: str | None = None
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Method:
    """One method of a route: the endpoint that answers it and what it promises."""

    endpoint: Endpoint
    operation: Operation


@dataclass
class Route:
    """One path template and, for each method it accepts, its endpoint and operation."""

    name: str
    template: str
    methods: Mapping[str, Method] = field(default_factory=dict)
    # The envelope of the route's dialect; None: the app's (Hermes') error map.
    errors: ErrorMap | None = None

    def __post_init__(self) -> None:
        self.parts = self.template.split("/")

    def with_methods(self, endpoints: Mapping[str, Endpoint]) -> Route:
        """The same route and operations with other endpoints (a layer wrapping every handler
        once, at build time)."""
        methods = {name: Method(endpoints[name], method.operation) for name, method in self.methods.items()}
        return Route(self.name, self.template, methods, self.errors)

    @property
    def endpoints(self) -> dict[str, Endpoint]:
        return {name: method.endpoint for name, method in self.methods.items()}

    def match(self, segments: list[str]) -> dict[str, str] | None:
        if len(segments) != len(self.parts):
            return None
        params: dict[str, str] = {}
        for pattern, raw in zip(self.parts, segments, strict=True):
            if pattern.startswith("{"):
                # aiohttp's `{name}` pattern is `[^{}/]+` on the path_safe text.
                if not raw or "{" in raw or "}" in raw:
                    return None
                params[pattern[1:-1]] = segment_value(raw)
            elif pattern != raw:
                return None
        return params

    @property
    def allow(self) -> str:
        """The `Allow` header of a 405, formatted as aiohttp does."""
        return ",".join(sorted(self.methods))


@dataclass
class Match:
    route: Route | None
    params: dict[str, str]
    method: Method | None


class Router:
    """Resolve (method, raw path) to an endpoint, a 405 candidate, or nothing."""

    def __init__(self, routes: list[Route]) -> None:
        self.routes = routes
        # Only templates with as many segments as the path can match it (kept in table order).
        self._by_length: dict[int, list[Route]] = {}
        for route in routes:
            self._by_length.setdefault(len(route.parts), []).append(route)

    def resolve(self, method: str, raw_path: str) -> Match:
        segments = path_safe(raw_path).split("/")
        match = self._match(method, segments)
        if match.route is None and _profile_prefixed(segments):
            # Upstream mounts every route again under /p/{profile}; with profile
            # multiplexing off (always, here) the profile is ignored.
            match = self._match(method, [""] + segments[3:])
        return match

    def _match(self, method: str, segments: list[str]) -> Match:
        for route in self._by_length.get(len(segments), ()):
            params = route.match(segments)
            if params is not None:
                return Match(route, params, route.methods.get(method))
        return Match(None, {}, None)


def _profile_prefixed(segments: list[str]) -> bool:
    """`/p/<one non-empty segment>/<more>`, the segment matching aiohttp's `{profile}`."""
    return (
        len(segments) > 3 and segments[1] == "p" and bool(segments[2])
        and "{" not in segments[2] and "}" not in segments[2]
    )
