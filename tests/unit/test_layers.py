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


# What each top-level module or package may import besides itself: layer names, or dotted
# modules below the package (a module and its submodules). "" is the package root (versions).
# Every top-level name has a row; one without is a violation of its own.
_CORE = {"", "domain", "config"}
ALLOWED: dict[str, set[str]] = {
    "": set(),
    "__main__": {"cli"},
    "config": set(),
    "state": set(),
    "testkit": set(),  # the pytest plugin and client: nothing of the server
    "domain": {""},
    "store": _CORE,
    "agents": _CORE,
    "http": _CORE,
    "chat": _CORE | {"store", "agents"},
    "context": _CORE | {"agents", "chat", "http", "state", "store"},
    "openapi": _CORE | {"http"},
    # The Hermes product: route families (and `api/`, their contracts and error tables).
    "api": _CORE | {"agents", "chat", "context", "http", "openapi", "store"},
    "routes": _CORE | {"agents", "api", "chat", "context", "families", "http", "openapi", "store"},
    # A release's units (and the deviations'): each supplies routes, OpenAPI, error rows, columns and the
    # strategies handlers are given, so it stands above the route families it builds on.
    "units": _CORE | {"agents", "api", "chat", "context", "http", "openapi", "routes", "store"},
    # The unit a dialect declares (`cli.options` for the type of its option rows only).
    "families": _CORE | {"cli.options", "http", "state", "store"},
    # A dialect (another product's API) shares the edge, the writer machinery, the rules and
    # the chat use cases; never Hermes's routes, test control or the composition root.
    "hermrun": _CORE | {"chat", "families", "http", "openapi.build", "state", "store.db"},
    # The registry of known dialects reads each one's declaration only.
    "dialects": {"families", "hermrun.dialect"},
    "testing": _CORE | {"agents", "chat", "context", "families", "http", "openapi", "state", "store"},
    "app": _CORE | {"agents", "api", "chat", "context", "dialects", "families", "http", "openapi", "routes",
                    "state", "store", "testing", "units"},
    # The contract corpus is a client: stdlib, and the release list of domain/profiles.py.
    "contract": {"", "domain"},
    "cli": _CORE | {"agents", "app", "contract", "dialects", "families", "http", "store", "testing"},
}
# Single modules with an edge their layer does not have.
MODULE_ALLOWED: dict[str, set[str]] = {
    "hermrun.dialect": {"cli.options"},  # its `serve` option rows
    "hermrun.fixture": {"testing", "openapi"},  # its fixture key and /_fixture/ route are test control
}
# The generic edge knows no sessions or jobs: of domain/ it uses only text helpers (the redaction
# of error texts, and the scrubbing of lone surrogates that domain/titles.py keeps beside its users).
HTTP_DOMAIN = {f"{ROOT}.domain.redact", f"{ROOT}.domain.titles"}
ROUTES_SHARED = f"{ROOT}.routes.common"


def _permitted(source: str, target: str) -> bool:
    relative = target[len(ROOT) + 1:]
    allowed = ALLOWED[layer(source)] | MODULE_ALLOWED.get(source[len(ROOT) + 1:], set())
    return any(layer(target) == name or relative == name or relative.startswith(name + ".") for name in allowed)


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every broken rule, one line each."""
    found = []
    for source, targets in sorted(edges.items()):
        src_layer = layer(source)
        if src_layer not in ALLOWED:
            found.append(f"{source}: {src_layer or 'the root'} has no rule in test_layers.ALLOWED")
            continue
        for target in sorted(targets):
            dst_layer = layer(target)
            if src_layer == "routes" and dst_layer == "routes":
                if target not in (ROUTES_SHARED, f"{ROOT}.routes") and source != f"{ROOT}.routes":
                    found.append(f"{source} imports {target}: route modules never import each other")
                continue
            if src_layer == "http" and dst_layer == "domain" and target not in HTTP_DOMAIN:
                found.append(f"{source} imports {target}: http/ uses of domain/ only {sorted(HTTP_DOMAIN)}")
            if dst_layer == src_layer or _permitted(source, target):
                continue
            found.append(f"{source} imports {target}: {src_layer}/ may import only {sorted(ALLOWED[src_layer])}")
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
    assert f"{ROOT}.routes.sessions" in edges[f"{ROOT}.routes"]  # `from hermes_server.routes import sessions`


def test_every_top_level_module_has_a_rule() -> None:
    assert {layer(name) for name in modules()} - set(ALLOWED) == set()


@pytest.mark.parametrize(("edges", "expected"), [
    ({"hermes_server.domain.a": {"hermes_server.store.db"}}, "domain/ may import only"),
    ({"hermes_server.store.a": {"hermes_server.agents.base"}}, "store/ may import only"),
    ({"hermes_server.state": {"hermes_server.domain.clock"}}, "state/ may import only"),
    ({"hermes_server.http.a": {"hermes_server.routes.common"}}, "http/ may import only"),
    ({"hermes_server.http.a": {"hermes_server.api.errors"}}, "http/ may import only"),
    ({"hermes_server.http.a": {"hermes_server.domain.errors"}}, "http/ uses of domain/ only"),
    ({"hermes_server.api.a": {"hermes_server.routes.common"}}, "api/ may import only"),
    ({"hermes_server.api.a": {"hermes_server.hermrun.store"}}, "api/ may import only"),
    ({"hermes_server.chat.a": {"hermes_server.http.sse"}}, "chat/ may import only"),
    ({"hermes_server.routes.chat": {"hermes_server.routes.sessions"}}, "never import each other"),
    ({"hermes_server.routes.chat": {"hermes_server.testing.faults"}}, "routes/ may import only"),
    ({"hermes_server.context": {"hermes_server.testing.load"}}, "context/ may import only"),
    ({"hermes_server.hermrun.a": {"hermes_server.testing.validate"}}, "hermrun/ may import only"),
    ({"hermes_server.hermrun.a": {"hermes_server.routes.common"}}, "hermrun/ may import only"),
    ({"hermes_server.hermrun.a": {"hermes_server.store.sessions"}}, "hermrun/ may import only"),
    ({"hermes_server.hermrun.a": {"hermes_server.cli.options"}}, "hermrun/ may import only"),
    ({"hermes_server.routes.a": {"hermes_server.hermrun.store"}}, "routes/ may import only"),
    ({"hermes_server.routes.a": {"hermes_server.units.run_steer"}}, "routes/ may import only"),
    ({"hermes_server.units.a": {"hermes_server.testing.faults"}}, "units/ may import only"),
    ({"hermes_server.chat.a": {"hermes_server.units.unit"}}, "chat/ may import only"),
    ({"hermes_server.app": {"hermes_server.hermrun.store"}}, "app/ may import only"),
    ({"hermes_server.testing.load": {"hermes_server.hermrun.fixture"}}, "testing/ may import only"),
    ({"hermes_server.dialects": {"hermes_server.hermrun.store"}}, "dialects/ may import only"),
    # The review's finding (20248a3): these four passed unflagged before every module had a rule.
    ({"hermes_server.testkit.plugin": {"hermes_server.app"}}, "testkit/ may import only"),
    ({"hermes_server.openapi.document": {"hermes_server.routes.sessions"}}, "openapi/ may import only"),
    ({"hermes_server.context": {"hermes_server.routes.common"}}, "context/ may import only"),
    ({"hermes_server.cli.options": {"hermes_server.routes.common"}}, "cli/ may import only"),
    ({"hermes_server.newthing": {"hermes_server.domain.ids"}}, "newthing has no rule"),
    ({"hermes_server.contract.verify": {"hermes_server.app"}}, "contract/ may import only"),
    ({"hermes_server.contract.play": {"hermes_server.http.routing"}}, "contract/ may import only"),
])
def test_the_rules_catch_each_kind_of_violation(edges: dict[str, set[str]], expected: str) -> None:
    assert any(expected in line for line in violations(edges))


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
