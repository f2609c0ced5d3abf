"""tools/lowest_direct.py, which `make test-min` (and so CI) installs the dependency floors with."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tools.lowest_direct import constraints, floor_pin

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("requirement", "pin"), [
    ("uvicorn[standard]>=0.31.1,<1", "uvicorn==0.31.1"),
    ("sse-starlette>=3.4.9,<4", "sse-starlette==3.4.9"),
    ("hermes-control-mcp==0.2.0b5", "hermes-control-mcp==0.2.0b5"),
    ("PyYAML>=6", "PyYAML==6"),
    ("ruff<0.18,>=0.17", "ruff==0.17"),
])
def test_a_requirement_becomes_its_floor_without_extras(requirement: str, pin: str) -> None:
    assert floor_pin(requirement) == pin


@pytest.mark.parametrize("requirement", ["starlette", "starlette<2", "starlette~=1.0"])
def test_a_requirement_without_a_lower_bound_is_refused(requirement: str) -> None:
    with pytest.raises(ValueError, match="no lower bound"):
        floor_pin(requirement)


def test_every_declared_dependency_has_a_floor() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = constraints(sorted(project["optional-dependencies"]))
    declared = len(project["dependencies"]) + sum(map(len, project["optional-dependencies"].values()))
    assert len(pins) == declared and all("==" in pin and "[" not in pin for pin in pins)


def test_an_unknown_extra_is_named() -> None:
    with pytest.raises(ValueError, match=r"no such extra in pyproject\.toml: colour"):
        constraints(["colour"])
