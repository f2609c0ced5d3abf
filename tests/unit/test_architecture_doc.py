"""docs/architecture.md names every module of the package, and names none that is gone.

The page's module lists are the map a newcomer reads first; a list written by hand
drifts (it once named 9 of `domain/`'s 21 modules), so this test holds it to the tree.
A module is named by its path below `hermes_server/` in backticks (`domain/ids.py`);
a package's `__init__.py` counts only when it holds more than a docstring.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hermes_server"
DOC = ROOT / "docs" / "architecture.md"
# A backticked path ending in .py (`domain/ids.py`, `app.py`, `tests/unit/test_layers.py`).
MENTION = re.compile(r"`([A-Za-z0-9_./-]+\.py)`")


def _has_code(path: Path) -> bool:
    """More than a docstring (and `from __future__` imports)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(
        not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        for node in body
    )


def tree_modules() -> set[str]:
    """Every module of the package as a path below hermes_server/."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__init__.py" and not _has_code(path):
            continue
        found.add(path.relative_to(PACKAGE).as_posix())
    return found


def doc_mentions() -> set[str]:
    return set(MENTION.findall(DOC.read_text(encoding="utf-8")))


def test_every_module_is_named_in_the_architecture_page() -> None:
    missing = sorted(tree_modules() - doc_mentions())
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_the_architecture_page_names_no_module_that_is_gone() -> None:
    gone = sorted(m for m in doc_mentions() if not (PACKAGE / m).exists() and not (ROOT / m).exists())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"
