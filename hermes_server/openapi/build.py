"""The builders every OpenAPI fragment of the server is written with, once.

Each route family (and each dialect, and each unit of a release) describes what its
operations name in a schemas module of its own, as `Components` (by section: `schemas`,
`responses`, `parameters`, `securitySchemes`); these helpers are what those modules share.
Data in, data out: nothing here knows a route.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# OpenAPI components by section, then by name.
Components = Mapping[str, Mapping[str, Any]]


def ref(kind: str, name: str) -> dict[str, str]:
    """A reference to the component `name` of section `kind`."""
    return {"$ref": f"#/components/{kind}/{name}"}


def schema_ref(name: str) -> dict[str, str]:
    return ref("schemas", name)


def json_answer(description: str, schema: str, headers: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A response whose body is the JSON schema `schema` (with response `headers`, when given)."""
    answer: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": schema_ref(schema)}}}
    if headers:
        answer["headers"] = dict(headers)
    return answer


def error_answer(description: str) -> dict[str, Any]:
    """A response in the error envelope (the `Error` schema)."""
    return json_answer(description, "Error")


def nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


def with_example(example: Any, schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "examples": [example]}


def json_object(properties: dict[str, Any], required: Iterable[str] = (), closed: bool = True) -> dict[str, Any]:
    """An object schema; `closed`: no other properties."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": list(required)}
    if closed:
        schema["additionalProperties"] = False
    return schema


def record(properties: dict[str, Any], optional: Iterable[str] = ()) -> dict[str, Any]:
    """A closed object whose every property but the `optional` ones is always present."""
    left_out = set(optional)
    return json_object(properties, [key for key in properties if key not in left_out])


def extended(base: Mapping[str, Any], properties: Mapping[str, Any], *, required: bool = True) -> dict[str, Any]:
    """The object schema `base` with more properties (required too, when every answer has them)."""
    grown = {**base, "properties": {**base["properties"], **properties}}
    if required:
        grown["required"] = [*base["required"], *properties]
    return grown


def merged(*parts: Components) -> dict[str, dict[str, Any]]:
    """`parts` section by section; a later part's component replaces an earlier one of the same name."""
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for section, entries in part.items():
            out.setdefault(section, {}).update(entries)
    return out


def with_flag(capabilities: Mapping[str, Any], name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The `Capabilities` schema `capabilities` with the object-valued feature flag `name` described
    (and required) under `features`."""
    features = capabilities["properties"]["features"]
    described = {**features, "required": [*features.get("required", ()), name],
                 "properties": {**features.get("properties", {}), name: schema}}
    return extended(capabilities, {"features": described}, required=False)


def query_parameter(name: str, description: str) -> dict[str, Any]:
    """A query parameter read as text."""
    return {"name": name, "in": "query", "description": description, "schema": {"type": "string"}}
