"""Print pip constraints pinning every direct dependency to the lowest version pyproject.toml allows.

`make test-min` installs the package with these constraints into a venv of its own and runs
`make test-fast` there, so a lower bound the code does not run on fails CI instead of a user's
install (the lock file pins the newest versions, which hide such a floor). Each requirement of
`[project] dependencies` and of the named extras becomes `name==floor`, where the floor is its
`>=` bound or its `==` pin; a requirement with neither is refused, since then nothing says which
version is the least. Transitive dependencies are left to the resolver (as uv's
`--resolution lowest-direct` does). Standard library only: it runs before any venv exists.

    python3 tools/lowest_direct.py test yaml > constraints.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
# `name[extra,...] (>=|==)version` and any further clauses (`,<2`); markers are not used here.
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")
FLOOR = re.compile(r"(?:^|,)\s*(?:>=|==)\s*([0-9][^,;\s]*)")


def floor_pin(requirement: str) -> str:
    """`uvicorn[standard]>=0.30.0,<1` -> `uvicorn==0.30.0` (a pip constraint takes no extras)."""
    match = REQUIREMENT.match(requirement)
    if not match:
        raise ValueError(f"cannot read the requirement {requirement!r}")
    name, specifier = match.groups()
    floor = FLOOR.search(specifier)
    if not floor:
        raise ValueError(f"{requirement!r} has no lower bound (>= or ==): give it one")
    return f"{name}=={floor.group(1)}"


def constraints(extras: list[str]) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in optional]
    if unknown:
        raise ValueError(f"no such extra in pyproject.toml: {', '.join(unknown)} (there are: {', '.join(optional)})")
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += optional[extra]
    return [floor_pin(requirement) for requirement in requirements]


def main(argv: list[str]) -> int:
    try:
        print("\n".join(constraints(argv)))
    except ValueError as error:
        print(f"lowest_direct: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
