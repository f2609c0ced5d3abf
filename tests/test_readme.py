"""The README's options table names every `serve` flag and its environment variable.

A newcomer configures the server (and the container) from that table alone, so a flag
added to the CLI without a row fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from hermes_server.cli.main import build_parser

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _options_table() -> str:
    section = README.split("## Options and environment", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("| `--"))


def test_every_serve_flag_and_its_environment_variable_has_a_row() -> None:
    serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # noqa: SLF001 - argparse has no public API
    table = _options_table()
    rows = {re.match(r"\| `(--[a-z-]+)", line).group(1): line for line in table.splitlines()}
    flags = [option for action in serve._actions for option in action.option_strings  # noqa: SLF001
             if option.startswith("--") and option != "--help"]
    assert sorted(rows) == sorted(flags)
    for action in serve._actions:  # noqa: SLF001
        env = re.search(r"env ([A-Z_]+)", action.help or "")
        if env:
            assert f"`{env.group(1)}" in rows[action.option_strings[0]], action.option_strings[0]
