"""Routes, what each method promises, and a router that matches on the raw path.

aiohttp matches `{session_id}` against one raw path segment and then percent-decodes
it: `/api/sessions/a%2Fb` addresses the id `a/b`. ASGI servers hand Starlette an
already-decoded path, where that distinction is lost, hence this module.

Each method of a route carries an `Operation`: the only description of the API, from
which /openapi.json and /v1/capabilities are generated, and the contract the pipeline
enforces (its security scheme).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Flag, auto
from typing import TYPE_CHECKING, Any

from hermes_server.http.paths import path_safe, segment_value

if TYPE_CHECKING:
    from hermes_server.http.errors import ErrorMap

Endpoint = Callable[..., Awaitable[Any]]


# The security scheme of the Hermes routes (`Authorization: Bearer <key>`).
BEARER = "bearer"


class Effect(Flag):
    """What a call does, as far as a client (and test control, and the connector audit) must know
    it: whether asking again repeats it, whether it shows what earlier calls did. "The resource"
    is the one its path names."""

    NONE = 0
    # Shows the resource as it is now: a client unsure of an earlier call reads it to reconcile.
    READ = auto()
    # Shows the whole collection (so every resource in it).
    LIST = auto()
    # Changes state so that asking again repeats the change: never retried blindly.
    UNSAFE = auto()
    # Writes to the resource: after the server named another id for it (a rotation), a client
    # sends its next writes there.
    WRITE = auto()
    # Runs an agent turn on the resource.
    TURN = auto()
    # Copies the resource into a new one, in steps that are each stored.
    FORK = auto()


@dataclass(frozen=True, kw_only=True)
class Operation:
    """What clients may rely on for one method of one route.

    `summary` is the operation's short, stable name, in the words users read (docs/api.md's headings,
    and the behaviours a connector check reports); `description` is what a client must know beyond
    its fields and answers: the order things happen in, and the hazards (Markdown).
    `capability` is the operation's name under `/v1/capabilities` `endpoints` (upstream's
    names; None for paths upstream does not advertise; where it is listed is the release's
    order, domain/profiles.py). `features` are the capability flags that serving this
    operation makes true. `responses` maps each status the handler can answer to a response
    name of the OpenAPI document. `security` names the OpenAPI security scheme a caller must
    satisfy (a dialect names its own; None: open): the pipeline runs that scheme's check
    before the handler, so the document and the answers cannot disagree.

    What other layers need to know of the call is here too, so they derive it from the
    served table instead of listing routes: its `effect` (the connector audit's rules, the
    fault kinds that act inside fork and the chat turn), whether it may answer as a stream
    of server-sent events (`streams`: a `stream_cut` fault acts on it), and its name among
    the operations of the Hermes session API documentation (`documented`: a fault or a
    journal filter may name it so).
    """

    summary: str
    responses: Mapping[int, str]
    description: str | None = None
    capability: str | None = None
    features: tuple[str, ...] = ()
    security: str | None = BEARER
    body: str | None = None
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    effect: Effect = Effect.NONE
    streams: bool = False
    documented: str | None = None


@dataclass(frozen=True)
class Amendment:
    """What a unit changes on a method of a route it does not serve itself (by the route's id): more
    query and header parameters, more answers (an answer named under a status the operation
    already has replaces it), and a paragraph more of its description (`note`)."""

    route: str
    method: str
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    responses: Mapping[int, str] = field(default_factory=dict)
    note: str | None = None

    def applied(self, op: Operation) -> Operation:
        description = "\n\n".join(text for text in (op.description, self.note) if text) or None
        return replace(op, query=(*op.query, *self.query), headers=(*op.headers, *self.headers),
                       responses={**op.responses, **self.responses}, description=description)


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

    def replacing(self, methods: Mapping[str, Method]) -> Route:
        """The same route with `methods` added, or replacing those it had of the same name."""
        return Route(self.name, self.template, {**self.methods, **methods}, self.errors)

    def amended(self, change: Amendment) -> Route:
        """The same route with `change` applied to its operation of `change.method`."""
        method = self.methods[change.method]
        return self.replacing({change.method: Method(method.endpoint, change.applied(method.operation))})

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


def in_order(routes: Sequence[Route], order: Sequence[str]) -> list[Route]:
    """`routes` in `order` (by route name). A route `order` does not name keeps its place right after
    the route before it in `routes` (a family's new route sits with its family)."""
    rank = {name: at for at, name in enumerate(order)}
    keyed: list[tuple[int, int, int, Route]] = []
    placed = -1
    for position, route in enumerate(routes):
        listed = rank.get(route.name)
        if listed is not None:
            placed = listed
        keyed.append((placed, 0 if listed is not None else 1, position, route))
    return [route for *_, route in sorted(keyed, key=lambda entry: entry[:3])]
