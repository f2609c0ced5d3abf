"""The suite's own tiers (tests/conftest.py): every test its TIERS table names exists."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import TIERS

ROOT = Path(__file__).resolve().parents[2]


def test_every_tiered_test_exists() -> None:
    """A renamed test would silently leave its tier (and slow down make test-fast)."""
    missing = []
    for nodeid in TIERS:
        path, name = nodeid.split("::")
        tree = ast.parse((ROOT / path).read_text())
        if name not in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}:
            missing.append(nodeid)
    assert missing == []
