"""Reading an OpenAPI document in tests: `$ref`s resolved, and an answer checked against a schema of it."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator


def resolved(node: Any, document: dict[str, Any]) -> Any:
    """`node` with every `$ref` of `document` replaced by what it names (the document has no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = document
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return resolved(target, document)
        return {key: resolved(value, document) for key, value in node.items()}
    if isinstance(node, list):
        return [resolved(value, document) for value in node]
    return node


def schema_errors(document: dict[str, Any], schema: str, value: Any) -> list[str]:
    """Where `value` breaks the document's schema `schema` (none: it conforms)."""
    validator = Draft202012Validator(resolved(document["components"]["schemas"][schema], document))
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(value)]


def profile_document(version: str = "0.19.0", *, fixture_api: bool = False) -> dict[str, Any]:
    """The document a server answering as `version` serves, built in process (no server, no files)."""
    from hermes_server.app import openapi_document
    from hermes_server.domain.profiles import PROFILES

    return openapi_document(PROFILES[version], fixture_api=fixture_api)
