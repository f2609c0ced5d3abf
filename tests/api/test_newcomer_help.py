"""`--help` points at what a pip user has: no path into the package's source tree, and a docs
page only as "in the source" (the wheel carries no docs/ and the docs have no URL).

`serve --help` once sent users to `hermes_server/agents/script.py` and bare `docs/*.md` paths.
"""

from __future__ import annotations

import re

import pytest

from hermes_server.cli.main import build_parser
from hermes_server.cli.options import SERVE_OPTIONS
from hermes_server.dialects import KNOWN


def help_of(command: str) -> str:
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")  # noqa: SLF001
    return action.choices[command].format_help()  # type: ignore[attr-defined]


def bare_pointers(text: str) -> list[str]:
    """The source paths and bare docs paths in `text`."""
    flat = re.sub(r"-\s+", "-", " ".join(text.split()))  # argparse wraps after a hyphen
    sources = re.findall(r"hermes_server/\S+\.py", flat)
    docs = [m.group(0) for m in re.finditer(r"docs/[\w-]+\.md(?! in the source)", flat)]
    return sources + docs


@pytest.mark.parametrize("command", ["seed", "audit", "healthcheck"])
def test_a_commands_help_names_no_file_a_pip_user_lacks(command: str) -> None:
    assert bare_pointers(help_of(command)) == []


def test_the_serve_options_name_no_file_a_pip_user_lacks() -> None:
    for option in SERVE_OPTIONS + tuple(row for dialect in KNOWN for row in dialect.options):
        assert bare_pointers(option.help_text()) == [], option.flag


def test_a_dialects_sentences_name_no_file_a_pip_user_lacks() -> None:
    for dialect in KNOWN:
        for note in (dialect.seed_note, dialect.replace_note):
            assert bare_pointers(note or "") == [], dialect.name


def test_the_script_format_is_reachable_from_an_install() -> None:
    assert "python -m pydoc hermes_server.agents.script" in " ".join(help_of("serve").split())
