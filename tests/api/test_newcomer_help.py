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


def home_help(command: str) -> str:
    """The --home line of a command's help, unwrapped."""
    text = " ".join(help_of(command).split())
    return text[text.index("--home DIR ", text.index("options:")):].split(" --", 1)[0]


@pytest.mark.parametrize("command", ["audit", "healthcheck"])
def test_home_of_a_probe_says_it_only_locates_the_key(command: str) -> None:
    """Once "directory holding state.db" here too, where nothing but the kept key is read."""
    line = home_help(command)
    assert "key" in line and "hermes-server.key" in line and "state.db" not in line, line


def test_home_of_seed_is_where_the_fixture_goes_and_of_serve_what_it_holds() -> None:
    assert "fixture is loaded into" in home_help("seed")
    assert "state.db" in home_help("serve") and "kept key" in home_help("serve")
