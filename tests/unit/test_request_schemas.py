"""Every request body of every profile's /openapi.json says what a client should send.

A client generator (openapi-python-client, tests/api/test_generated_client.py) turns an untyped
property (`{}`, or only a description) into `Any`; so every property of every request body, at
any depth (inside arrays, alternatives and the components they name), has a type, a `$ref`, a
`const` or an `enum`, or is a set of alternatives that each do. Where the server takes more than
the type, as upstream does, the field's description says so (checked for the fields that do).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hermes_server.domain.profiles import PROFILES
from tests.support.openapi import profile_document, resolved

TYPING_KEYS = ("type", "$ref", "const", "enum")
ALTERNATIVES = ("anyOf", "oneOf", "allOf")


def _untyped(schema: dict[str, Any], where: str) -> Iterator[str]:
    """Where in `schema` (resolved) a value is not typed."""
    alternatives = [sub for key in ALTERNATIVES for sub in schema.get(key, ())]
    if not any(key in schema for key in TYPING_KEYS) and not alternatives:
        yield f"{where}: {schema}"
    for sub in alternatives:
        yield from _untyped(sub, where)
    for name, prop in (schema.get("properties") or {}).items():
        yield from _untyped(prop, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _untyped(schema["items"], f"{where}[]")


def _request_bodies(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, op in item.items():
            for media in op.get("requestBody", {}).get("content", {}).values():
                yield f"{method.upper()} {path}", resolved(media["schema"], document)


@pytest.mark.parametrize("fixture_api", [False, True], ids=["served", "fixture-api"])
@pytest.mark.parametrize("version", sorted(PROFILES))
def test_no_request_body_property_is_untyped(version: str, fixture_api: bool) -> None:
    document = profile_document(version, fixture_api=fixture_api)
    bodies = list(_request_bodies(document))
    assert bodies
    untyped = [found for where, schema in bodies for found in _untyped(schema, where)]
    assert untyped == []


def test_the_check_finds_what_it_looks_for() -> None:
    schema = {"type": "object", "properties": {
        "a": {}, "b": {"description": "any"}, "c": {"type": "array", "items": {}},
        "d": {"anyOf": [{"type": "string"}, {"properties": {}}]}, "e": {"type": "string"},
        "f": {"$ref": "#/x"}, "g": {"enum": [1]}}}
    assert [found.split(":")[0] for found in _untyped(schema, "X")] == ["X.a", "X.b", "X.c[]", "X.d"]


@pytest.mark.parametrize("version", sorted(PROFILES))
def test_a_field_read_more_loosely_than_its_type_says_so(version: str) -> None:
    """The fields upstream stringifies or reads as a word: their descriptions say what else is taken."""
    document = profile_document(version)
    schemas = document["components"]["schemas"]
    for schema, field in (("CreateSession", "title"), ("CreateSession", "id"), ("PatchSession", "title"),
                          ("ForkSession", "title"), ("ForkSession", "id")):
        assert "str()" in schemas[schema]["properties"][field]["description"], (schema, field)
    assert "Falsy" in schemas["PatchSession"]["properties"]["end_reason"]["description"]
    for schema, field in (("OpenAIChatRequest", "stream"), ("ResponseRequest", "store"),
                          ("RunApprovalRequest", "all")):
        assert "`yes`" in schemas[schema]["properties"][field]["description"], (schema, field)
