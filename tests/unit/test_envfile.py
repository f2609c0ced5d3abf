"""`$HERMES_HOME/.env` read as upstream's loader reads it (python-dotenv), and refused where it skips a line.

python-dotenv is here already (uvicorn[standard] brings it), so each form people write is
read by both and must give the same values; what python-dotenv only warns about is refused,
naming the file and line and never the line's text.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from dotenv import dotenv_values
from dotenv.parser import parse_stream

from hermes_server.cli import envfile
from hermes_server.cli.envfile import EnvFileError, expand, parse
from hermes_server.cli.options import ENV_ORIGINS

FORMS = [
    "A=1\nB=2", "export A=1", "export  A=1", "A = 1", "  A=1", "\n\nA=1\n\n", "A=1 \n", "A=\t1\t", "A=a=b",
    "A='x y'", 'A="x\\ny"', "A='x\\ny'", 'A="a\\"b"', "A='it\\'s'", 'A="tab\\tx"', "A=x\\y", 'A=""', "A=''",
    "A=x # a comment", "A=x#not-a-comment", "# only a comment\nA=1", 'A="x" # c', "A='x'   # c",
    "A=\nB=2", "A", "A\nB=1", 'A="first\nsecond"', "A='first\nsecond'", "'A'=1", "A=1\r\nB=2\r\n", "A=1\rB=2",
    "A=${HOME}", "A=${NOT_SET_ANYWHERE:-fallback}", "A=${NOT_SET_ANYWHERE}", "A=1\nB=${A}x", "A='${HOME}'",
    'A="${HOME}"', "A=$HOME", "A=${A:-self}", "A=é", 'A="\\u00e9"', "exportA=1", "API_SERVER_KEY=abc # tail",
]
MALFORMED = [("A='it''s'", 1), ('A="x" y', 1), ("=1", 1), ("A='x", 1), ('A="x', 1), ("A=1\n\n=2", 3), ("A B=1", 1)]


@pytest.mark.parametrize("text", FORMS)
def test_every_form_reads_as_python_dotenv_reads_it(text: str) -> None:
    assert not any(binding.error for binding in parse_stream(io.StringIO(text)))
    theirs = dict(dotenv_values(stream=io.StringIO(text), interpolate=True))
    assert expand(parse(text, "f"), dict(os.environ)) == theirs


@pytest.mark.parametrize(("text", "line"), MALFORMED)
def test_what_python_dotenv_skips_is_refused_by_line_without_its_text(text: str, line: int) -> None:
    assert any(binding.error for binding in parse_stream(io.StringIO(text)))
    with pytest.raises(EnvFileError) as refused:
        parse(text, "/home/.env")
    assert str(refused.value).startswith(f"/home/.env, line {line}: ")
    assert "it may hold a secret" in str(refused.value)
    for token in ("it''s", "x\" y", "'x"):
        assert token not in str(refused.value)


def test_the_file_overrides_the_environment_but_never_names_the_home(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_SERVER_KEY=from-file-0123456789abcdef\nHERMES_HOME=/elsewhere\nDECLARED\n"
                                   "OPENAI_API_KEY=sk-x\n")
    environ = {"API_SERVER_KEY": "from-shell-0123456789abcdef", "HERMES_HOME": str(tmp_path)}
    loaded = envfile.load(tmp_path, environ)
    assert loaded is not None
    assert environ == {"API_SERVER_KEY": "from-file-0123456789abcdef", "HERMES_HOME": str(tmp_path),
                       "OPENAI_API_KEY": "sk-x"}
    assert (loaded.names, loaded.ignored) == (("API_SERVER_KEY", "OPENAI_API_KEY"), ("HERMES_HOME",))
    assert ENV_ORIGINS["API_SERVER_KEY"] == tmp_path / ".env"
    line = envfile.summary(loaded, {"API_SERVER_KEY"})
    assert "API_SERVER_KEY" in line and "1 other" in line and "HERMES_HOME there is ignored" in line
    assert "from-file" not in line and "sk-x" not in line


def test_no_file_is_no_settings_and_a_directory_is_refused(tmp_path: Path) -> None:
    assert envfile.load(tmp_path, {}) is None
    assert envfile.load(tmp_path / "no-such-home", {}) is None
    (tmp_path / ".env").mkdir()
    with pytest.raises(EnvFileError, match="is a directory"):
        envfile.load(tmp_path, {})


def test_a_byte_order_mark_and_latin_1_are_read_as_upstream_reads_them(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"\xef\xbb\xbfA=1\nB=caf\xe9\n")
    environ: dict[str, str] = {}
    envfile.load(tmp_path, environ)
    assert environ == {"A": "1", "B": "café"}
