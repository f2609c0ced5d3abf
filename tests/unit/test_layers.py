"""The layer rules of docs/architecture.md, checked from the source.

Every import counts: module level, function-local and under `TYPE_CHECKING`. The
graph is built from the files with `ast`, without importing the package, so a rule
broken in a branch that never runs is still caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hermes_server"
ROOT = "hermes_server"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The package modules `path` imports (a `from pkg import name` of a submodule names the submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == ROOT)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    names = set(known)
    return {name: imports_of(path, names) - {name} for name, path in known.items()}


def layer(module: str) -> str:
    """The top-level part of the package a module belongs to (`domain`, `app`, `cli`, …)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path of module names, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


# What each layer may import besides itself ("" is the package root: versions only).
ALLOWED = {
    "domain": {""},
    "store": {"", "domain", "config"},
    "agents": {"", "domain", "config"},
    "http": {"", "domain", "config"},
}
# The generic edge knows no sessions or jobs: of domain/ it uses only text helpers (the redaction
# of error texts, and the scrubbing of lone surrogates that domain/titles.py keeps beside its users).
HTTP_DOMAIN = {f"{ROOT}.domain.redact", f"{ROOT}.domain.titles"}
CHAT_FORBIDDEN = {"http", "routes", "testing", "app", "cli"}
# The Hermes product's tables (api/) sit beside the routes, which use them; they never
# reach up to the routes, test control or the composition root.
API_FORBIDDEN = {"routes", "testing", "app", "cli"}
TESTING_IMPORTERS = {"app", "cli", "testing"}
# A dialect (another product's API) shares the edge, the writer machinery, the rules and the
# chat use cases, and nothing else: never Hermes's routes, test control or the composition root.
DIALECTS = {"hermrun"}
DIALECT_ALLOWED = {"", "domain", "config", "http", "chat"}
DIALECT_STORE = f"{ROOT}.store.db"
ROUTES_SHARED = f"{ROOT}.routes.common"


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every broken rule, one line each."""
    found = []
    for source, targets in sorted(edges.items()):
        src_layer = layer(source)
        for target in sorted(targets):
            dst_layer = layer(target)
            if dst_layer == src_layer and src_layer != "routes":
                continue
            if src_layer in ALLOWED and dst_layer not in ALLOWED[src_layer] and dst_layer != src_layer:
                found.append(f"{source} imports {target}: {src_layer}/ may import only {sorted(ALLOWED[src_layer])}")
            if src_layer == "http" and dst_layer == "domain" and target not in HTTP_DOMAIN:
                found.append(f"{source} imports {target}: http/ uses of domain/ only {sorted(HTTP_DOMAIN)}")
            if src_layer == "api" and dst_layer in API_FORBIDDEN:
                found.append(f"{source} imports {target}: api/ never imports {dst_layer}")
            if src_layer == "chat" and dst_layer in CHAT_FORBIDDEN:
                found.append(f"{source} imports {target}: chat/ never imports {dst_layer}")
            if src_layer in DIALECTS and dst_layer not in DIALECT_ALLOWED and target != DIALECT_STORE:
                found.append(f"{source} imports {target}: a dialect may import only http/, chat/, domain/, "
                             "config and store/db.py")
            if dst_layer in DIALECTS and src_layer in {"domain", "store", "agents", "http", "chat", "routes", "api"}:
                found.append(f"{source} imports {target}: only app.py, cli.py and testing/ know a dialect")
            if dst_layer == "testing" and src_layer not in TESTING_IMPORTERS:
                found.append(f"{source} imports {target}: only app.py, cli.py and testing/ import testing/")
            if (src_layer == "routes" and dst_layer == "routes" and target not in (ROUTES_SHARED, f"{ROOT}.routes")
                    and source != f"{ROOT}.routes"):
                found.append(f"{source} imports {target}: route modules never import each other")
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert find_cycle(graph()) is None


def test_every_layer_imports_only_what_it_may() -> None:
    assert violations(graph()) == []


def test_the_graph_sees_every_kind_of_import() -> None:
    """Function-local and TYPE_CHECKING imports are edges too (the checks above rely on it)."""
    edges = graph()
    assert f"{ROOT}.testing.control" in edges[f"{ROOT}.app"]  # imported inside a method
    assert f"{ROOT}.http.routing" in edges[f"{ROOT}.context"]  # imported under TYPE_CHECKING
    assert f"{ROOT}.routes.sessions" in edges[f"{ROOT}.app"]  # `from hermes_server.routes import sessions`


@pytest.mark.parametrize(("edges", "expected"), [
    ({"hermes_server.domain.a": {"hermes_server.store.db"}}, "domain/ may import only"),
    ({"hermes_server.store.a": {"hermes_server.agents.base"}}, "store/ may import only"),
    ({"hermes_server.http.a": {"hermes_server.routes.common"}}, "http/ may import only"),
    ({"hermes_server.http.a": {"hermes_server.api.errors"}}, "http/ may import only"),
    ({"hermes_server.http.a": {"hermes_server.domain.errors"}}, "http/ uses of domain/ only"),
    ({"hermes_server.api.a": {"hermes_server.routes.common"}}, "api/ never imports routes"),
    ({"hermes_server.api.a": {"hermes_server.hermrun.store"}}, "only app.py, cli.py and testing/ know"),
    ({"hermes_server.chat.a": {"hermes_server.http.sse"}}, "chat/ never imports http"),
    ({"hermes_server.routes.chat": {"hermes_server.routes.sessions"}}, "never import each other"),
    ({"hermes_server.routes.chat": {"hermes_server.testing.faults"}}, "only app.py, cli.py and testing/"),
    ({"hermes_server.context": {"hermes_server.testing.load"}}, "only app.py, cli.py and testing/"),
    ({"hermes_server.hermrun.a": {"hermes_server.testing.validate"}}, "a dialect may import only"),
    ({"hermes_server.hermrun.a": {"hermes_server.routes.common"}}, "a dialect may import only"),
    ({"hermes_server.hermrun.a": {"hermes_server.store.sessions"}}, "a dialect may import only"),
    ({"hermes_server.routes.a": {"hermes_server.hermrun.store"}}, "only app.py, cli.py and testing/ know"),
])
def test_the_rules_catch_each_kind_of_violation(edges: dict[str, set[str]], expected: str) -> None:
    assert any(expected in line for line in violations(edges))


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
