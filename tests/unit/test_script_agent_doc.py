"""docs/script-agent.md documents the script agent's file as the agent reads it.

The format once lived only in `agents/script.py`'s docstring, which a user of the README or
the docs never sees. The page's example must load, and every key the agent reads must be
in the page's tables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hermes_server.agents import script

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "script-agent.md").read_text(encoding="utf-8")


def test_the_pages_example_is_a_script_the_agent_loads(tmp_path: Path) -> None:
    example = re.search(r"```json\n(.*?)```", PAGE, re.DOTALL)
    assert example is not None
    path = tmp_path / "script.json"
    path.write_text(example.group(1))
    turns = script.load_script(path)
    assert [turn.match for turn in turns] == ["deploy", None]
    assert {kind for turn in turns for step in turn.steps for kind in step} >= set(script._STEP_KINDS)  # noqa: SLF001
    assert json.loads(example.group(1))["turns"][0]["steps"][-1]["approval"]


def test_every_key_the_agent_reads_is_in_the_pages_tables() -> None:
    rows = {match.group(1) for match in re.finditer(r"^\| `\{?\"?([a-z_]+)", PAGE, re.MULTILINE)}
    entry = {"match", "steps", "reply", "usage"}
    tool = {"tool", "args", "preview", "result", "failed", "approval"}
    approval = {"pattern_key", "description", "command", "allow_permanent"}
    assert entry | tool | approval | set(script._STEP_KINDS) <= rows, sorted(rows)  # noqa: SLF001
    for usage in script._USAGE_FIELDS:  # noqa: SLF001
        assert f"`{usage}`" in PAGE, usage
