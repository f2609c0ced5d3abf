"""The OpenAPI 3.1 document, generated from the live route table.

Paths and methods come only from the route table `app.py` composes; each method of a
route carries an `Operation` (summary, responses, body, feature flags), so nothing
describes a path twice. `/v1/capabilities` reads the same operations.

The components are what the served families, units and dialects describe (each in its own
schemas module), of which the document keeps exactly those the served operations name,
directly or through another component, listed by name: a component no served route names
is not emitted, and the order the parts were composed in cannot change the bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hermes_server import UPSTREAM_VERSION, __version__
from hermes_server.http.routing import Operation, Route
from hermes_server.openapi.build import Components, ref

# Order in which methods of one path appear in the document.
_METHOD_ORDER = ("GET", "POST", "PUT", "PATCH", "DELETE")
# The sections of `components`, in the order the document lists them.
SECTIONS = ("securitySchemes", "parameters", "responses", "schemas")
# The scheme every operation is under unless it names another (the document's top-level `security`).
DEFAULT_SECURITY = "bearer"


def method_rank(method: str) -> tuple[int, str]:
    """Where a method of one path is listed (here and in /v1/capabilities)."""
    return (_METHOD_ORDER.index(method) if method in _METHOD_ORDER else len(_METHOD_ORDER), method)


def _path_parameters(template: str) -> list[dict[str, str]]:
    return [ref("parameters", part[1:-1]) for part in template.split("/") if part.startswith("{")]


def _operation_id(route: Route, method: str, op: Operation) -> str:
    return op.capability or f"{route.name}_{method.lower()}"


def _operation(route: Route, method: str, op: Operation) -> dict[str, Any]:
    body: dict[str, Any] = {
        "operationId": _operation_id(route, method, op),
        "summary": op.summary,
    }
    if op.description:
        body["description"] = op.description
    parameters = _path_parameters(route.template)
    parameters += [ref("parameters", name) for name in (*op.query, *op.headers)]
    if parameters:
        body["parameters"] = parameters
    if op.body:
        body["requestBody"] = {"required": True,
                               "content": {"application/json": {"schema": ref("schemas", op.body)}}}
    body["responses"] = {str(status): ref("responses", name) for status, name in sorted(op.responses.items())}
    body["security"] = [{op.security: []}] if op.security else []
    return body


def operations(routes: Iterable[Route]) -> Iterable[tuple[Route, str, Operation]]:
    """Every (route, method, operation), in table order (each method carries its operation)."""
    for route in routes:
        for method in sorted(route.methods, key=method_rank):
            yield route, method, route.methods[method].operation


def _session_links(served: list[tuple[Route, str, Operation]]) -> dict[str, Any]:
    """From any answer carrying a session, every served operation on that session."""
    return {
        _operation_id(route, method, op): {
            "operationId": _operation_id(route, method, op),
            "parameters": {"session_id": "$response.body#/session/id"},
        }
        for route, method, op in served if "{session_id}" in route.template
    }


def _references(node: Any) -> Iterator[tuple[str, str]]:
    """The (section, name) of every `$ref` in `node`, at any depth."""
    if isinstance(node, dict):
        target = node.get("$ref")
        if isinstance(target, str) and target.startswith("#/components/"):
            section, name = target.removeprefix("#/components/").split("/", 1)
            yield section, name
        for value in node.values():
            yield from _references(value)
    elif isinstance(node, list):
        for value in node:
            yield from _references(value)


def named_components(paths: Mapping[str, Any], components: Components) -> dict[str, dict[str, Any]]:
    """Of `components`, those the operations of `paths` name (and those these name), each section
    by name. A name with no component stays unresolved: the document's own test finds it."""
    kept: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    schemes = {DEFAULT_SECURITY} | {scheme for item in paths.values() for op in item.values()
                                    for requirement in op["security"] for scheme in requirement}
    pending = [("securitySchemes", scheme) for scheme in schemes] + list(_references(paths))
    while pending:
        section, name = pending.pop()
        entry = components.get(section, {}).get(name)
        if entry is None or name in kept.setdefault(section, {}):
            continue
        kept[section][name] = entry
        pending.extend(_references(entry))
    return {section: dict(sorted(entries.items())) for section, entries in kept.items()}


def build_document(routes: Iterable[Route], components: Components) -> dict[str, Any]:
    """The OpenAPI 3.1 document for exactly the routes being served, with the components of
    `components` (by section) their operations name."""
    served = list(operations(routes))
    paths: dict[str, Any] = {}
    for route, method, op in served:
        paths.setdefault(route.template, {})[method.lower()] = _operation(route, method, op)
    named = named_components(paths, components)
    if "Session" in named["responses"]:
        named["responses"]["Session"] = {**named["responses"]["Session"], "links": _session_links(served)}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hermes-server",
            "version": __version__,
            "summary": f"The Hermes Agent persistent-session API, as served by hermes-agent {UPSTREAM_VERSION}.",
            "description": (
                "Every path below is served by this instance. Errors use the envelope "
                "`{\"error\": {\"message\", \"type\", \"param\", \"code\"}}`; unknown paths answer "
                "404 and wrong methods 405 (`text/plain`, with `Allow`), as upstream does."
            ),
        },
        "paths": paths,
        "components": named,
        "security": [{DEFAULT_SECURITY: []}],
    }
