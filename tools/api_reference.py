"""Write docs/api.md, the API reference, from the OpenAPI documents the server serves.

Every `--hermes-version` profile's `/openapi.json` (with `--fixture-api`, so the test-control routes
are in it too) is built in process, exactly as a server serves it (`hermes_server.app.openapi_document`),
and every operation of every profile is written out: method and path, auth, what it does and the
hazards a connector must handle (the operation's `description`), its parameters and request fields
with their types and rules, its answers with when each happens, and a curl example. A part of an
operation that only some profiles have, or that they describe differently, is labelled with those
profiles. Nothing is written by hand: the prose lives in the operations and schemas of the package,
so `/openapi.json` readers get it too. tests/unit/test_api_reference.py fails when docs/api.md is not
what this writes.

    python -m tools.api_reference           # rewrite docs/api.md
    python -m tools.api_reference --check   # exit 1 when docs/api.md is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_server.app import openapi_document
from hermes_server.domain.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "api.md"
BASE_URL = "http://127.0.0.1:8642"
# The nine session routes, first and in this order.
SESSION_ROUTES = [
    ("GET", "/api/sessions"), ("POST", "/api/sessions"), ("GET", "/api/sessions/{session_id}"),
    ("PATCH", "/api/sessions/{session_id}"), ("DELETE", "/api/sessions/{session_id}"),
    ("GET", "/api/sessions/{session_id}/messages"), ("POST", "/api/sessions/{session_id}/fork"),
    ("POST", "/api/sessions/{session_id}/chat"), ("POST", "/api/sessions/{session_id}/chat/stream"),
]
# The sections after the session routes: a title and the path prefixes it holds, in this order.
SECTIONS = [
    ("Models and session model locks", ("/api/sessions", "/api/model/")),
    ("Health and discovery", ("/health", "/v1/health", "/v1/models", "/v1/capabilities", "/openapi.json")),
    ("OpenAI-compatible chat", ("/v1/chat/completions",)),
    ("Responses API", ("/v1/responses",)),
    ("Structured runs", ("/v1/runs",)),
    ("Cron jobs", ("/api/jobs",)),
    ("Skills, toolsets and platform callbacks", ("/v1/skills", "/v1/toolsets", "/api/platforms/", "/api/cron/")),
    ("Routes of Hermes 0.21.2 not served here", ("/v1/browser-control/", "/v1/artifacts/", "/v1/room-members/")),
    ("Test control (`serve --fixture-api`)", ("/_fixture/", "/_inspector")),
]
# What a curl example puts in each path parameter.
PATH_EXAMPLES = {"session_id": "demo", "run_id": "$RUN_ID", "response_id": "$RESPONSE_ID", "job_id": "$JOB_ID",
                 "platform": "telegram", "artifact_id": "$ARTIFACT_ID"}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


VERSIONS = sorted(PROFILES, key=_version_key)


@dataclass(frozen=True)
class Served:
    """One operation as one profile's document has it."""

    version: str
    document: dict[str, Any]
    operation: dict[str, Any]


# -- reading a document -----------------------------------------------------------------


def _target(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """`node`, or what its `$ref` names (followed until it is not a reference)."""
    while "$ref" in node:
        section, name = node["$ref"].removeprefix("#/components/").split("/", 1)
        node = {**document["components"][section][name], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def type_text(document: dict[str, Any], schema: dict[str, Any]) -> str:
    """A schema as a reader says its type: `string or null`, `array of TextPart`, `one of: a, b` …"""
    name = _ref_name(schema)
    if name:
        return f"`{name}`"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(value) if not isinstance(value, str) else value}`"
                                     for value in schema["enum"])
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        return " or ".join(type_text(document, sub) for sub in alternatives)
    kinds = schema.get("type")
    if kinds is None:
        return "any JSON value"
    names = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"]:
            item = type_text(document, schema["items"])
            names.append(f"array of ({item})" if " or " in item else f"array of {item}")
        else:
            names.append(kind)
    return " or ".join(names)


def _rules(schema: dict[str, Any]) -> list[str]:
    """The JSON Schema limits of a field, in words."""
    words = {"minLength": "at least {} character(s)", "maxLength": "at most {} characters", "minimum": "at least {}",
             "maximum": "at most {}", "minItems": "at least {} item(s)", "maxItems": "at most {} items",
             "minProperties": "at least {} field(s)", "pattern": "matches `{}`"}
    limits = [text.format(schema[key]) for key, text in words.items() if key in schema]
    return [f"({', '.join(limits)})"] if limits else []


def _cell(text: str) -> str:
    """Text for a Markdown table cell (one line, pipes escaped)."""
    return " ".join(text.split()).replace("|", "\\|")


def field_rows(document: dict[str, Any], schema: dict[str, Any], prefix: str = "",
               depth: int = 0) -> Iterator[tuple[str, str]]:
    """(name, `type | required | rules` cells) of an object schema's fields, with one level of the
    inline objects they hold (`messages[].role`)."""
    schema = _target(document, schema)
    required = set(schema.get("required", ()))
    for name, prop in (schema.get("properties") or {}).items():
        target = _target(document, prop)
        rules = [*_rules(target), *([prop["description"]] if prop.get("description") else
                                    [target["description"]] if target.get("description") and not _ref_name(prop)
                                    else [])]
        cells = f"{_cell(type_text(document, prop))} | {'yes' if name in required else ''} | {_cell(' '.join(rules))}"
        yield f"{prefix}{name}", cells
        if depth == 0:
            inline = prop.get("items") if prop.get("type") == "array" else prop
            if isinstance(inline, dict) and "properties" in inline and not _ref_name(inline):
                marker = "[]" if inline is not prop else ""
                yield from field_rows(document, inline, f"{prefix}{name}{marker}.", depth + 1)


# -- merging what profiles serve --------------------------------------------------------------


def _labelled(rows: Iterable[tuple[str, tuple[str, str]]], all_versions: list[str]) -> list[tuple[str, str]]:
    """Rows (key, text) gathered over profiles, each text once with the profiles it holds for, when
    not every profile that serves the operation: `(key, text)` in first-seen order."""
    seen: dict[str, dict[str, list[str]]] = {}  # key -> text -> versions (variants of a key stay together)
    for version, (key, text) in rows:
        seen.setdefault(key, {}).setdefault(text, []).append(version)
    out = []
    for key, variants in seen.items():
        for text, versions in variants.items():
            label = "" if versions == all_versions else f" *({profiles_text(versions)})*"
            out.append((key, text + label))
    return out


def profiles_text(versions: list[str]) -> str:
    """`0.20.4 and later`, `0.19.0 only`, or the list."""
    at = [VERSIONS.index(version) for version in versions]
    if len(versions) == 1 and at[0] != len(VERSIONS) - 1:
        return f"{versions[0]} only"
    if at == list(range(at[0], len(VERSIONS))):
        return f"{versions[0]} and later"
    return ", ".join(versions)


def _paragraphs(served: list[Served], all_versions: list[str]) -> list[str]:
    rows = ((item.version, (paragraph, paragraph)) for item in served
            for paragraph in (item.operation.get("description") or "").split("\n\n") if paragraph.strip())
    return [text for _, text in _labelled(rows, all_versions)]


def _auth(document: dict[str, Any], operation: dict[str, Any]) -> str:
    schemes = [scheme for requirement in operation["security"] for scheme in requirement]
    if not schemes:
        return "none"
    described = document["components"]["securitySchemes"]
    return "; ".join("the API key, `Authorization: Bearer <key>`" if scheme == "bearer" else
                     f"`{scheme}`: {described[scheme].get('description', '')}" for scheme in schemes)


def _parameters(item: Served) -> Iterator[tuple[str, str]]:
    document = item.document
    for parameter in item.operation.get("parameters", ()):
        target = _target(document, parameter)
        schema = target.get("schema", {})
        rules = [*_rules(schema), *([target["description"]] if target.get("description") else [])]
        where = target["in"]
        yield f"{target['name']} ({where})", (f"`{target['name']}` | {where} | {_cell(type_text(document, schema))} | "
                                              f"{_cell(' '.join(rules))}")


def _body(item: Served) -> tuple[str, list[tuple[str, str]]] | None:
    body = item.operation.get("requestBody")
    if not body:
        return None
    media, content = next(iter(body["content"].items()))
    schema = content["schema"]
    target = _target(item.document, schema)
    note = f"`{_ref_name(schema)}`, {media}" if _ref_name(schema) else media
    if target.get("description"):
        note += f". {target['description']}"
    return note, list(field_rows(item.document, schema))


def _answers(item: Served) -> Iterator[tuple[str, str]]:
    document = item.document
    for status, answer in item.operation["responses"].items():
        target = _target(document, answer)
        bodies = []
        for media, content in (target.get("content") or {}).items():
            name = _ref_name(content.get("schema", {}))
            bodies.append(f"`{name}` ({media})" if name else media)
        yield status, f"{status} | {_cell(target['description'])} | {_cell(', '.join(bodies))}"


def _example(served: list[Served]) -> str | None:
    """A curl line for the operation (the latest profile's request body example), or None when its
    body has no example."""
    item = served[-1]
    method, path = item.operation["x-method"], item.operation["x-path"]
    url = BASE_URL + re.sub(r"\{(\w+)\}", lambda match: PATH_EXAMPLES.get(match.group(1), "X"), path)
    parts = ["curl", "-s"]
    if any(200 <= int(status) < 300 and "text/event-stream" in (_target(item.document, answer).get("content") or {})
           and "application/json" not in (_target(item.document, answer).get("content") or {})
           for status, answer in item.operation["responses"].items()):
        parts.append("-N")
    if method != "GET" and method != "POST":
        parts += ["-X", method]
    if item.operation["security"]:
        parts += ["-H", '"Authorization: Bearer $KEY"']
    body = item.operation.get("requestBody")
    if body:
        schema = _target(item.document, next(iter(body["content"].values()))["schema"])
        if not schema.get("examples"):
            return None
        parts += ["-H", "'Content-Type: application/json'", "-d", f"'{json.dumps(schema['examples'][0])}'"]
    elif method == "POST":
        parts += ["-X", "POST"]
    parts.append(url)
    return " ".join(parts)


def _table(header: str, rows: list[str]) -> list[str]:
    columns = header.count("|") + 1
    return [f"| {header} |", "|" + " --- |" * columns, *(f"| {row} |" for row in rows)]


def render_operation(served: list[Served]) -> list[str]:
    """The section of one operation, over the profiles that serve it (oldest first)."""
    versions = [item.version for item in served]
    latest = served[-1]
    method, path = latest.operation["x-method"], latest.operation["x-path"]
    summaries = _labelled(((item.version, ("", item.operation["summary"])) for item in served), versions)
    lines = [f"### {' / '.join(text for _, text in summaries)}", "", f"`{method} {path}`", ""]
    facts = [f"Auth: {_auth(latest.document, latest.operation)}."]
    if versions != VERSIONS:
        facts.append(f"Served by {profiles_text(versions)}.")
    lines += [" ".join(facts), ""]
    for paragraph in _paragraphs(served, versions):
        lines += [paragraph, ""]
    parameters = _labelled(((item.version, row) for item in served for row in _parameters(item)), versions)
    if parameters:
        lines += ["Parameters:", "", *_table("name | in | type | rules", [text for _, text in parameters]), ""]
    bodies = [(item.version, _body(item)) for item in served]
    if any(body for _, body in bodies):
        notes = _labelled(((version, ("", body[0])) for version, body in bodies if body), versions)
        lines += ["Request body: " + "; ".join(text for _, text in notes), ""]
        fields = _labelled(((version, (name, f"`{name}` | {cells}")) for version, body in bodies if body
                            for name, cells in body[1]), versions)
        if fields:
            lines += [*_table("field | type | required | rules", [text for _, text in fields]), ""]
    answers = _labelled(((item.version, row) for item in served for row in _answers(item)), versions)
    answers.sort(key=lambda row: row[0])
    lines += ["Answers:", "", *_table("status | when | body", [text for _, text in answers]), ""]
    example = _example(served)
    if example:
        lines += ["```bash", example, "```", ""]
    return lines


# -- the page -------------------------------------------------------------------------------


def documents() -> dict[str, dict[str, Any]]:
    """Each profile's document as a `--fixture-api` server serves it, each operation knowing its method and path."""
    out = {}
    for version in VERSIONS:
        document = openapi_document(PROFILES[version], fixture_api=True)
        for path, item in document["paths"].items():
            for method, operation in item.items():
                operation["x-method"], operation["x-path"] = method.upper(), path
        out[version] = document
    return out


def operations(docs: dict[str, dict[str, Any]]) -> dict[tuple[str, str], list[Served]]:
    """Every (method, path) any profile serves, in the latest profile's order (older-only ones after),
    with each profile's operation."""
    table: dict[tuple[str, str], list[Served]] = {}
    for version in reversed(VERSIONS):
        document = docs[version]
        for path, item in document["paths"].items():
            for method, operation in item.items():
                table.setdefault((method.upper(), path), []).insert(0, Served(version, document, operation))
    return table


def section_of(path: str) -> str:
    for title, prefixes in SECTIONS:
        if any(path == prefix or path.startswith(prefix) for prefix in prefixes):
            return title
    return "Other routes"


def _shared_schemas(docs: dict[str, dict[str, Any]]) -> list[str]:
    """The schemas more than one request names (a user message's content and its parts)."""
    latest = docs[VERSIONS[-1]]
    lines = ["## Shared request schemas", ""]
    for name in ("Content", "TextPart", "ImagePart", "InputMessage"):
        schema = latest["components"]["schemas"][name]
        lines += [f"### `{name}`", "", f"Type: {type_text(latest, schema)}. {schema.get('description', '')}".strip(), ""]
        rows = [f"`{field}` | {cells}" for field, cells in field_rows(latest, schema)]
        if rows:
            lines += [*_table("field | type | required | rules", rows), ""]
    return lines


def render() -> str:
    docs = documents()
    table = operations(docs)
    missing = [key for key in SESSION_ROUTES if key not in table]
    if missing:
        raise SystemExit(f"api_reference: session routes not served: {missing}")
    grouped: dict[str, list[tuple[str, str]]] = {}
    for key in table:
        if key not in SESSION_ROUTES:
            grouped.setdefault(section_of(key[1]), []).append(key)
    titles = ["The session routes", *(title for title, _ in SECTIONS if title in grouped),
              *(["Other routes"] if "Other routes" in grouped else [])]
    lines = [
        "# API reference",
        "",
        "<!-- Generated by `python -m tools.api_reference` from the OpenAPI documents the server serves; do not",
        "     edit: change the operations and schemas in hermes_server/ and run the command again. -->",
        "",
        "Every route hermes-server serves, for every `--hermes-version` profile "
        f"({', '.join(VERSIONS)}; {VERSIONS[0]} is the default). The same text is in each server's "
        "`GET /openapi.json`, which lists exactly the routes that server serves. Where a route, a field or an "
        "answer belongs to some profiles only, or reads differently in them, it is labelled with them, e.g. "
        "*(0.20.4 and later)*.",
        "",
        "- **Base URL and key.** `http://127.0.0.1:8642` by default; every route but the health checks, "
        "`/openapi.json` and the platform callbacks needs `Authorization: Bearer <key>` (the key `serve` prints, "
        "kept in `HERMES_HOME/hermes-server.key`, or the one set with `--api-key`).",
        "- **Errors.** JSON errors are `{\"error\": {\"message\", \"type\", \"param\", \"code\"}}` (the 401 has no "
        "`param`); the jobs routes answer a bare `{\"error\": \"…\"}`. An unknown path is a text/plain 404 and a "
        "wrong method a text/plain 405 with `Allow`, as upstream. A JSON body over 10,000,000 bytes is 413 "
        "(`body_too_large`), before the key is checked.",
        "- **Where hermes-server differs from 0.19.0** on purpose, and how `--upstream-quirks` gives 0.19.0's "
        "answers instead: [differences.md](differences.md). What each profile changes: [versions.md](versions.md).",
        "- The examples use `KEY=$(cat .hermes-home/hermes-server.key)`, and a session `demo` "
        "(`POST /api/sessions` with `{\"id\": \"demo\"}`).",
        "",
        "Contents:",
        "",
        *(f"- [{title}](#{_anchor(title)})" for title in titles),
        f"- [Shared request schemas](#{_anchor('Shared request schemas')})",
        "",
        "## The session routes",
        "",
    ]
    for key in SESSION_ROUTES:
        lines += render_operation(table[key])
    for title in titles[1:]:
        lines += [f"## {title}", ""]
        for key in grouped[title]:
            lines += render_operation(table[key])
    lines += _shared_schemas(docs)
    return "\n".join(lines).rstrip() + "\n"


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.api_reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is not what would be written")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if TARGET.read_text(encoding="utf-8") != text:
            print("docs/api.md is out of date: run python -m tools.api_reference", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
